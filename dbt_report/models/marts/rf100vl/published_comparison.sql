-- Our and imported leaderboard rows beside the published RF100-VL numbers of other detectors.

with ours_and_imported as (

    select model, origin, family, size, mAP50_95, datasets_scored
    from {{ ref('leaderboard') }}
    where mAP50_95 is not null

),

published as (

    select model, 'published' as origin, family, size, mAP50_95, cast(null as bigint) as datasets_scored
    from {{ ref('stg_warehouse__published') }}

),

unioned as (

    select * from ours_and_imported
    union all
    select * from published

)

select
    model,
    origin,
    family,
    size,
    mAP50_95,
    datasets_scored,
    rank() over (order by mAP50_95 desc) as rank_overall,
    mAP50_95 - (select max(mAP50_95) from published) as delta_vs_best_published
from unioned
