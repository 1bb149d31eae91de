-- The augbench paper table: one row per (config, transform, library) of the plan or of the results, with the
-- pooled median items/s, its spread, the speedup over the reference library and whether the cell is the fastest.
-- A planned cell with no result yet is `missing`.

{%- set reference = var('augbench_reference_library', 'albumentationsx') %}

with cells as (

    select * from {{ ref('stg_warehouse__augbench_cells') }}

),

planned as (

    select * from {{ ref('stg_warehouse__augbench_planned') }}

),

grid as (

    select config, transform, library from cells
    union
    select config, transform, library from planned

),

-- media, mode and device of a config (one value each), for its planned cells with no result yet
config_facts as (

    select config, min(media) as media, min(mode) as mode, min(device) as device
    from cells
    group by config

),

joined as (

    select
        g.config,
        coalesce(c.media, f.media) as media,
        coalesce(c.mode, f.mode) as mode,
        coalesce(c.device, f.device) as device,
        g.transform,
        g.library,
        coalesce(c.status, 'missing') as status,
        coalesce(c.reason, p.planned_reason) as reason,
        p.planned_status,
        p.config is not null as in_plan,
        c.median_items_per_s as items_per_s,
        c.ci95_low_items_per_s as ci95_low,
        c.ci95_high_items_per_s as ci95_high,
        c.cv,
        c.unstable,
        coalesce(c.repeats, 0) as repeats,
        coalesce(c.runs, 0) as runs,
        c.preflight_items_per_s,
        c.hardware,
        c.library_version,
        c.materialize_us,
        c.materialize_copied,
        c.materialize_share,
        c.busy_repeats,
        c.clock_moved_repeats,
        c.speedup_ci95_low,
        c.speedup_ci95_high
    from grid as g
    left join cells as c
        on c.config = g.config and c.transform = g.transform and c.library = g.library
    left join planned as p
        on p.config = g.config and p.transform = g.transform and p.library = g.library
    left join config_facts as f
        on f.config = g.config

),

compared as (

    select
        *,
        max(case when status = 'ok' then items_per_s end)
            over (partition by config, transform) as best_items_per_s,
        max(case when status = 'ok' and library = '{{ reference }}' then items_per_s end)
            over (partition by config, transform) as reference_items_per_s,
        count(case when status = 'ok' and items_per_s is not null then 1 end)
            over (partition by config, transform) as ok_libraries
    from joined

)

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
    in_plan,
    items_per_s,
    ci95_low,
    ci95_high,
    cv,
    unstable,
    repeats,
    runs,
    preflight_items_per_s,
    case
        when status = 'ok' and reference_items_per_s > 0 then items_per_s / reference_items_per_s
    end as speedup_vs_albumentationsx,
    coalesce(status = 'ok' and items_per_s = best_items_per_s, false) as is_fastest,
    ok_libraries,
    hardware,
    library_version,
    materialize_us,
    materialize_copied,
    materialize_share,
    busy_repeats,
    clock_moved_repeats,
    speedup_ci95_low,
    speedup_ci95_high
from compared
order by config, transform, library
