-- Seed-to-seed noise: one row per (model, dataset) scored with more than one seed, the model itself (its recipe's
-- seed) and its replicates (model@seedN: `bench campaign --replicates K`). The current test score of each seed;
-- the spread is what a difference between two models must exceed before it means anything.

with seeded as (

    select base_model as model, dataset, seed, mAP50_95
    from {{ ref('stg_warehouse__scores') }}
    where is_current and split = 'test' and mAP50_95 is not null
        and model not like '%@resume'  -- the pilot's kill-and-resume check repeats a seed: not a seed of its own

)

select
    model,
    dataset,
    count(*) as seeds,
    list(seed order by seed) as seed_list,
    avg(mAP50_95) as mean_mAP50_95,
    stddev_samp(mAP50_95) as sd_mAP50_95,
    min(mAP50_95) as min_mAP50_95,
    max(mAP50_95) as max_mAP50_95,
    max(mAP50_95) - min(mAP50_95) as range_mAP50_95
from seeded
group by model, dataset
having count(*) >= 2
