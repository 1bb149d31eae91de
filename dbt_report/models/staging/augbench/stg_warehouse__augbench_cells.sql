-- One row per augbench (config, library, transform): the latest repeat's status and the throughput pooled over
-- the repeats of the current config, every rate in items/s.

select
    config,
    media,
    mode,
    device,
    library,
    transform,
    status,
    reason,
    repeats,
    runs,
    "median" as median_items_per_s,
    "mean" as mean_items_per_s,
    std as std_items_per_s,
    cv,
    ci95_low as ci95_low_items_per_s,
    ci95_high as ci95_high_items_per_s,
    unstable,
    preflight_throughput as preflight_items_per_s,
    hardware,
    threads,
    media_hash,
    library_version,
    materialize_us,
    materialize_copied,
    materialize_share,
    busy_repeats,
    clock_moved_repeats,
    speedup_ci95_low,
    speedup_ci95_high
from {{ source('warehouse', 'augbench_cells') }}
