-- What training cost, per model of ours: the current runs of its campaign datasets, plus what superseded runs
-- (a recipe or signature change starts a fresh run; the old epochs are not reused) burned on top. Hours are
-- counted per device kind (int_runs.device_kind): CPU runs are CPU-hours, never GPU-hours.

with runs as (

    select
        r.*,
        (m.model is null or su.dataset is not null) as in_campaign
    from {{ ref('int_runs') }} as r
    left join {{ ref('stg_warehouse__models') }} as m on m.model = r.model
    left join {{ ref('stg_warehouse__suites') }} as su on su.suite = m.suite and su.dataset = r.dataset

)

select
    model,
    count(*) filter (where is_current) as datasets_trained,
    median(wall_seconds / 60.0) filter (where is_current) as median_train_minutes,
    sum(wall_seconds) filter (where is_current) / 3600.0 as total_train_hours,
    case
        when count(wall_seconds) filter (where is_current) = 0 then null
        when count(wall_seconds) filter (where is_current and device_kind is null) > 0 then null
        when min(device_kind) filter (where is_current and wall_seconds is not null)
            = max(device_kind) filter (where is_current and wall_seconds is not null)
            then min(device_kind) filter (where is_current and wall_seconds is not null)
        else 'mixed'
    end as train_device,
    sum(wall_seconds) filter (where is_current and device_kind is distinct from 'cpu') / 3600.0 as total_gpu_hours,
    sum(wall_seconds) filter (where is_current and device_kind = 'cpu') / 3600.0 as total_cpu_hours,
    median(best_epoch) filter (where is_current) as median_best_epoch,
    avg(epochs_done) filter (where is_current) as mean_epochs_done,
    count(*) filter (where is_current and resumed) as resumed_runs,
    count(*) filter (where not is_current) as superseded_runs,
    coalesce(sum(wall_seconds) filter (where not is_current), 0) / 3600.0 as superseded_gpu_hours
from runs
where in_campaign
group by model
