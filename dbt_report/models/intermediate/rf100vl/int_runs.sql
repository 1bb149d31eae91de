-- One row per training run (stg_warehouse__runs) with the kind of device it trained on, `device_kind`:
-- 'cpu' or 'gpu' (stats.json's device.device is "cpu" on a CPU lane, a CUDA device otherwise), NULL when the
-- warehouse does not record it. Train cost is reported in CPU-hours or GPU-hours by this column: a CPU smoke run
-- is never shown as GPU-hours.
{#- The device reaches this model once stg_warehouse__runs selects a `device` column (the loader's runs table
    carrying stats.json's device.device: docs/report.md). Until then every run's device_kind is NULL, which the
    report shows as "device not recorded" rather than guessing. -#}
{%- set run_columns = [] -%}
{%- if execute -%}
    {%- set run_columns = adapter.get_columns_in_relation(ref('stg_warehouse__runs'))
        | map(attribute='name') | map('lower') | list -%}
{%- endif %}

select
    r.*,
    {% if 'device' in run_columns -%}
    case when r.device is null then null when lower(r.device) = 'cpu' then 'cpu' else 'gpu' end
    {%- else -%}
    cast(null as varchar)
    {%- endif %} as device_kind
from {{ ref('stg_warehouse__runs') }} as r
