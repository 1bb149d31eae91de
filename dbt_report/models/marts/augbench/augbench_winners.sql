-- Per (config, library): on how many transforms the library is the fastest of the ok cells (ties count for every
-- tied library), out of the transforms it was measured on, and its geometric-mean speedup over the reference.

with cells as (

    select * from {{ ref('augbench_paper_table') }}

),

counted as (

    select
        config,
        library,
        count(*) filter (where is_fastest) as wins,
        count(*) filter (where is_fastest and ok_libraries = 1) as uncontested_wins,
        count(*) filter (where status = 'ok' and items_per_s is not null) as transforms_compared,
        count(*) filter (where speedup_vs_albumentationsx > 0) as transforms_vs_reference,
        exp(avg(ln(speedup_vs_albumentationsx)) filter (where speedup_vs_albumentationsx > 0))
            as geomean_speedup_vs_albumentationsx
    from cells
    group by config, library

)

select
    config,
    library,
    wins,
    uncontested_wins,
    transforms_compared,
    transforms_vs_reference,
    geomean_speedup_vs_albumentationsx,
    rank() over (partition by config order by wins desc) as rank
from counted
order by config, rank, library
