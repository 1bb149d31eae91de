-- One row per training run (stg_warehouse__runs) with the kind of device it trained on, `device_kind`:
-- 'cpu' or 'gpu' (stats.json's device.device is "cpu" on a CPU lane, a CUDA device otherwise), NULL for a run
-- whose stats.json does not record it. Train cost is reported in CPU-hours or GPU-hours by this column: a CPU
-- smoke run is never shown as GPU-hours.
select
    r.*,
    case when r.device is null then null when lower(r.device) = 'cpu' then 'cpu' else 'gpu' end as device_kind
from {{ ref('stg_warehouse__runs') }} as r
