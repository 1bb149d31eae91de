-- Every augbench cell that has no timed figure although a result exists: early-stopped (too slow in the
-- preflight pass, whose items/s is kept), unsupported (no equivalent) or error, each with its reason.

select
    config,
    media,
    mode,
    device,
    transform,
    library,
    status,
    reason,
    planned_status,
    case when status = 'early_stopped' then preflight_items_per_s end as preflight_items_per_s
from {{ ref('augbench_paper_table') }}
where status in ('early_stopped', 'unsupported', 'error')
order by config, status, transform, library
