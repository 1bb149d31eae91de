-- Our and imported leaderboard rows beside the published RF100-VL numbers of other detectors.
-- `leaderboard_rank` is the position among the published results and is given only to comparable rows (the
-- leaderboard mart's rule: protocol-conformant, every RF100-VL dataset and nothing else); a row of ours that is
-- not comparable keeps its number here, marked, with `not_comparable_because`. `rank_overall` ranks every row
-- whatever it covers: an ordering of the table, not a leaderboard position.

with ours_and_imported as (

    select
        model, origin, family, size, mAP50_95, datasets_scored, benchmark_datasets_scored, benchmark_datasets,
        protocol_conformant, comparable, not_comparable_because, leaderboard_rank
    from {{ ref('rf100vl_leaderboard') }}
    where mAP50_95 is not null

),

published as (

    select
        model,
        'published' as origin,
        family,
        size,
        mAP50_95,
        cast(null as bigint) as datasets_scored,
        cast(null as bigint) as benchmark_datasets_scored,
        cast(null as bigint) as benchmark_datasets,
        cast(null as boolean) as protocol_conformant,
        true as comparable,
        cast(null as varchar) as not_comparable_because
    from {{ ref('stg_warehouse__published') }}

),

published_ranked as (

    -- The same positions the leaderboard mart gives: published and comparable rows ranked together.
    select model, origin, leaderboard_rank from (
        select model, origin, rank() over (order by mAP50_95 desc) as leaderboard_rank
        from (
            select model, origin, mAP50_95 from ours_and_imported where comparable
            union all
            select model, origin, mAP50_95 from published
        )
    )
    where origin = 'published'

),

unioned as (

    select * from ours_and_imported
    union all by name
    select p.*, r.leaderboard_rank
    from published as p
    left join published_ranked as r on r.model = p.model

)

select
    model,
    origin,
    family,
    size,
    mAP50_95,
    datasets_scored,
    benchmark_datasets_scored,
    benchmark_datasets,
    protocol_conformant,
    comparable,
    not_comparable_because,
    leaderboard_rank,
    rank() over (order by mAP50_95 desc) as rank_overall,
    mAP50_95 - (select max(mAP50_95) from published) as delta_vs_best_published
from unioned
