-- What training cost, per model of ours: the current runs of its campaign datasets, plus what superseded runs
-- (a recipe or signature change starts a fresh run; the old epochs are not reused) burned on top. Hours are
-- counted per device kind (int_runs.device_kind): CPU runs are CPU-hours, never GPU-hours. A replicate's runs count
-- under the model it repeats (replicate_runs, replicate_hours), never as a model of their own.

with runs as (

    select
        r.*,
        (m.model is null or su.dataset is not null) as in_campaign,
        r.is_current and not r.is_replicate as own_current,  -- the model's own current run of a dataset
        not r.is_current and not r.is_replicate as own_superseded
    from {{ ref('int_runs') }} as r
    left join {{ ref('stg_warehouse__models') }} as m on m.model = r.model
    left join {{ ref('stg_warehouse__suites') }} as su on su.suite = m.suite and su.dataset = r.dataset

)

select
    base_model as model,
    count(*) filter (where own_current) as datasets_trained,
    median(wall_seconds / 60.0) filter (where own_current) as median_train_minutes,
    sum(wall_seconds) filter (where own_current) / 3600.0 as total_train_hours,
    case
        when count(wall_seconds) filter (where own_current) = 0 then null
        when count(wall_seconds) filter (where own_current and device_kind is null) > 0 then null
        when min(device_kind) filter (where own_current and wall_seconds is not null)
            = max(device_kind) filter (where own_current and wall_seconds is not null)
            then min(device_kind) filter (where own_current and wall_seconds is not null)
        else 'mixed'
    end as train_device,
    sum(wall_seconds) filter (where own_current and device_kind is distinct from 'cpu') / 3600.0 as total_gpu_hours,
    sum(wall_seconds) filter (where own_current and device_kind = 'cpu') / 3600.0 as total_cpu_hours,
    median(best_epoch) filter (where own_current) as median_best_epoch,
    avg(epochs_done) filter (where own_current) as mean_epochs_done,
    count(*) filter (where own_current and resumed) as resumed_runs,
    count(*) filter (where own_superseded) as superseded_runs,
    coalesce(sum(wall_seconds) filter (where own_superseded), 0) / 3600.0 as superseded_gpu_hours,
    -- Replicates (model@seedN) are the model trained again with other seeds: their cost is the model's, apart.
    count(*) filter (where is_current and is_replicate) as replicate_runs,
    coalesce(sum(wall_seconds) filter (where is_current and is_replicate), 0) / 3600.0 as replicate_hours
from runs
where in_campaign
group by base_model
