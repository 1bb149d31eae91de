-- What training cost, per model of ours: the current runs of its campaign datasets, plus what superseded runs
-- (a recipe or signature change starts a fresh run; the old epochs are not reused) burned on top.

with runs as (

    select
        r.*,
        (m.model is null or su.dataset is not null) as in_campaign
    from {{ ref('stg_warehouse__runs') }} as r
    left join {{ ref('stg_warehouse__models') }} as m on m.model = r.model
    left join {{ ref('stg_warehouse__suites') }} as su on su.suite = m.suite and su.dataset = r.dataset

)

select
    model,
    count(*) filter (where is_current) as datasets_trained,
    median(wall_seconds / 60.0) filter (where is_current) as median_train_minutes,
    sum(wall_seconds) filter (where is_current) / 3600.0 as total_gpu_hours,
    median(best_epoch) filter (where is_current) as median_best_epoch,
    avg(epochs_done) filter (where is_current) as mean_epochs_done,
    count(*) filter (where is_current and resumed) as resumed_runs,
    count(*) filter (where not is_current) as superseded_runs,
    coalesce(sum(wall_seconds) filter (where not is_current), 0) / 3600.0 as superseded_gpu_hours
from runs
where in_campaign
group by model
