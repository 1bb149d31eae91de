-- Coverage of each (config, library) against its plan: how many planned cells ended in each status, how many
-- have no result yet, and the share measured (ok).

with cells as (

    select * from {{ ref('augbench_paper_table') }}

),

counted as (

    select
        config,
        library,
        count(*) filter (where in_plan) as planned,
        count(*) filter (where in_plan and status = 'ok') as ok,
        count(*) filter (where in_plan and status = 'early_stopped') as early_stopped,
        count(*) filter (where in_plan and status = 'unsupported') as unsupported,
        count(*) filter (where in_plan and status = 'error') as error,
        count(*) filter (where in_plan and status = 'missing') as missing,
        count(*) filter (where not in_plan) as unplanned,
        median(items_per_s) filter (where status = 'ok') as median_items_per_s
    from cells
    group by config, library

)

select
    config,
    library,
    planned,
    ok,
    early_stopped,
    unsupported,
    error,
    missing,
    unplanned,
    case when planned > 0 then ok / planned end as measured_share,
    median_items_per_s
from counted
order by config, library
