-- Our and imported leaderboard rows beside the published RF100-VL numbers of other detectors.
-- `leaderboard_rank` is the position among the published results and is given only to comparable rows (the
-- leaderboard mart's rule: protocol-conformant, every RF100-VL dataset and nothing else); a row of ours that is
-- not comparable keeps its number here, marked, with `not_comparable_because`. `rank_overall` ranks every row
-- whatever it covers: an ordering of the table, not a leaderboard position.
--
-- Grouped like the published results: `family_label` is the name the published rows give a LibreYOLO family
-- (our rfdetr rows sit under RF-DETR, yolo9 under "YOLOv9 (LibreYOLO)"), else our family key; `size_rank` orders
-- the sizes inside it; `published_same_size` and `delta_vs_published_same_size` set a row of ours beside the
-- published number of the same family and size, the row it tries to reproduce.

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

published_families as (

    select distinct libreyolo_family, family as label
    from {{ ref('stg_warehouse__published') }}
    where libreyolo_family is not null

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

ours_grouped as (

    select
        o.*,
        coalesce(pf.label, o.family) as family_label,
        m.size_rank,
        same.model as published_same_size,
        same.mAP50_95 as published_same_size_mAP50_95
    from ours_and_imported as o
    left join published_families as pf on pf.libreyolo_family = o.family
    left join {{ ref('stg_warehouse__models') }} as m on m.model = o.model and o.origin = 'ours'
    left join {{ ref('stg_warehouse__published') }} as same
        on same.libreyolo_family = o.family and lower(same.size) = lower(o.size)

),

unioned as (

    select * from ours_grouped
    union all by name
    select
        p.*, r.leaderboard_rank, p.family as family_label, s.size_rank,
        cast(null as varchar) as published_same_size, cast(null as double) as published_same_size_mAP50_95
    from published as p
    left join published_ranked as r on r.model = p.model
    left join {{ ref('stg_warehouse__published') }} as s on s.model = p.model

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
    -- A gap to a published number only where the row is comparable with it (a smoke run's is no result).
    case when comparable then mAP50_95 - (select max(mAP50_95) from published) end as delta_vs_best_published,
    family_label,
    size_rank,
    published_same_size,
    case when comparable then mAP50_95 - published_same_size_mAP50_95 end as delta_vs_published_same_size
from unioned
