-- One row per model, ours and imported: unweighted means over the datasets of its campaign (NULL buckets,
-- COCO's -1, never enter a mean), the train cost behind those scores (ours only, in CPU- or GPU-hours by the
-- device the runs used), its coverage of the RF100-VL datasets, its protocol conformance, and its rank.
--
-- Two ranks: `rank` orders ours and imported among themselves whatever they cover; `leaderboard_rank` is the
-- position among the published results and is given only to a comparable entry (protocol-conformant, scored on
-- every RF100-VL dataset and on nothing else). A 4-dataset smoke run gets no leaderboard position, and
-- `not_comparable_because` says why.

with campaign_scores as (

    select * from {{ ref('int_model_dataset_scores') }}
    where in_campaign

),

benchmark as (

    -- The RF100-VL datasets (the vendored catalogue: 100); a published result is a mean over all of them.
    select count(*) as datasets from {{ ref('stg_warehouse__catalog') }}

),

per_model as (

    select
        model,
        origin,
        count(*) as datasets_scored,
        count(*) filter (where in_catalog) as benchmark_datasets_scored,
        avg(mAP50_95) as mAP50_95,
        avg(mAP50) as mAP50,
        avg(mAP75) as mAP75,
        avg(AR_max_det) as AR_max_det,
        median(train_minutes) as median_train_minutes,
        sum(wall_seconds) / 3600.0 as train_hours,
        sum(wall_seconds) filter (where device is distinct from 'cpu') / 3600.0 as gpu_hours,
        sum(wall_seconds) filter (where device = 'cpu') / 3600.0 as cpu_hours,
        case
            when count(wall_seconds) = 0 then null
            when count(wall_seconds) filter (where device is null) > 0 then null
            when min(device) filter (where wall_seconds is not null)
                = max(device) filter (where wall_seconds is not null)
                then min(device) filter (where wall_seconds is not null)
            else 'mixed'
        end as train_device,
        median(best_epoch) as median_best_epoch,
        bool_and(recipe_conformant) as runs_recipe_conformant
    from campaign_scores
    group by model, origin

),

registered as (

    select * from {{ ref('stg_warehouse__models') }}
    where not is_replicate

),

submissions as (

    select * from {{ ref('stg_warehouse__submissions') }}

),

family_of_run as (

    -- Family and size of an unregistered model of ours, from its runs.
    select model, any_value(family) as family, any_value(size) as size
    from {{ ref('stg_warehouse__runs') }}
    where not is_replicate
    group by model

),

-- A model registered or trained with nothing scored yet still gets its row (0 of N datasets).
all_models as (

    select model, origin from per_model
    union
    select model, 'ours' as origin from registered
    union
    select model, 'ours' as origin from family_of_run

),

rows as (

    select
        a.model,
        a.origin,
        case when a.origin = 'ours' then coalesce(r.family, f.family) end as family,
        case when a.origin = 'ours' then coalesce(r.size, f.size) end as size,
        coalesce(p.datasets_scored, 0) as datasets_scored,
        case when a.origin = 'ours' then r.expected_datasets else s.expected_datasets end as datasets_expected,
        coalesce(p.benchmark_datasets_scored, 0) as benchmark_datasets_scored,
        (select datasets from benchmark) as benchmark_datasets,
        p.mAP50_95,
        p.mAP50,
        p.mAP75,
        p.AR_max_det,
        p.median_train_minutes,
        p.train_hours,
        p.train_device,
        p.gpu_hours,
        p.cpu_hours,
        p.median_best_epoch,
        case
            when a.origin <> 'ours' then null
            when r.recipe_conformant = false or p.runs_recipe_conformant = false then false
            when r.recipe_conformant or p.runs_recipe_conformant then true
        end as recipe_conformant,
        -- Imported entries carry no recipe we can judge: their file's split and prediction settings must be the
        -- protocol's (test split, conf 0.001, NMS IoU 0.65, max_det 500: bench_assets/rf100vl/scoring/eval_store.py).
        case
            when a.origin <> 'imported' or s.model is null then null
            else s.split = 'test' and abs(s.conf - 0.001) < 1e-9 and abs(s.nms_iou - 0.65) < 1e-9
                and s.max_det = 500  -- NULL (not recorded) when a field is missing and none is off
        end as imported_protocol_conformant,
        coalesce(s.valid_submission, false) as valid_submission
    from all_models as a
    left join per_model as p on p.model = a.model and p.origin = a.origin
    left join registered as r on r.model = a.model and a.origin = 'ours'
    left join family_of_run as f on f.model = a.model and a.origin = 'ours'
    left join submissions as s on s.model = a.model and s.origin = a.origin

),

judged as (

    select
        *,
        coalesce(recipe_conformant, imported_protocol_conformant) as protocol_conformant,
        nullif(concat_ws('; ',
            case when mAP50_95 is null then 'no score' end,
            case when benchmark_datasets_scored < benchmark_datasets
                then format('{}/{} RF100-VL datasets scored', benchmark_datasets_scored, benchmark_datasets) end,
            case when datasets_scored > benchmark_datasets_scored
                then format('its mean includes {} dataset(s) outside RF100-VL',
                            datasets_scored - benchmark_datasets_scored) end,
            case when recipe_conformant = false then 'recipe not protocol-conformant' end,
            case when imported_protocol_conformant = false
                then 'split or prediction settings off the protocol' end,
            case when coalesce(recipe_conformant, imported_protocol_conformant) is null
                then 'protocol conformance not recorded' end
        ), '') as not_comparable_because
    from rows

),

published as (

    select model, mAP50_95 from {{ ref('stg_warehouse__published') }}

),

-- The leaderboard proper: every published result and every comparable entry of ours or imported.
positions as (

    select model, origin, rank() over (order by mAP50_95 desc) as leaderboard_rank
    from (
        select model, origin, mAP50_95 from judged where not_comparable_because is null
        union all
        select model, 'published' as origin, mAP50_95 from published
    )

)

select
    j.model,
    j.origin,
    j.family,
    j.size,
    j.datasets_scored,
    j.datasets_expected,
    j.benchmark_datasets_scored,
    j.benchmark_datasets,
    j.mAP50_95,
    j.mAP50,
    j.mAP75,
    j.AR_max_det,
    j.median_train_minutes,
    j.train_hours,
    j.train_device,
    j.gpu_hours,
    j.cpu_hours,
    j.median_best_epoch,
    j.recipe_conformant,
    j.protocol_conformant,
    j.valid_submission,
    j.not_comparable_because is null as comparable,
    j.not_comparable_because,
    pos.leaderboard_rank,
    case when j.mAP50_95 is not null then rank() over (order by j.mAP50_95 desc nulls last) end as rank
from judged as j
left join positions as pos on pos.model = j.model and pos.origin = j.origin
