-- The planned cells of every registered augbench config: what coverage is judged against.

select
    config,
    library,
    transform,
    planned_status,
    reason as planned_reason
from {{ source('warehouse', 'augbench_planned') }}
