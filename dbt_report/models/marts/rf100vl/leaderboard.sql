-- One row per model, ours and imported: unweighted means over the datasets of its campaign (NULL buckets,
-- COCO's -1, never enter a mean), the train cost behind those scores (ours only), and its rank.

with campaign_scores as (

    select * from {{ ref('int_model_dataset_scores') }}
    where in_campaign

),

per_model as (

    select
        model,
        origin,
        count(*) as datasets_scored,
        avg(mAP50_95) as mAP50_95,
        avg(mAP50) as mAP50,
        avg(mAP75) as mAP75,
        avg(AR_max_det) as AR_max_det,
        median(train_minutes) as median_train_minutes,
        sum(wall_seconds) / 3600.0 as gpu_hours,
        median(best_epoch) as median_best_epoch,
        bool_and(recipe_conformant) as runs_recipe_conformant
    from campaign_scores
    group by model, origin

),

registered as (

    select * from {{ ref('stg_warehouse__models') }}

),

submissions as (

    select * from {{ ref('stg_warehouse__submissions') }}

),

family_of_run as (

    -- Family and size of an unregistered model of ours, from its runs.
    select model, any_value(family) as family, any_value(size) as size
    from {{ ref('stg_warehouse__runs') }}
    group by model

),

-- A model registered or trained with nothing scored yet still gets its row (0 of N datasets).
all_models as (

    select model, origin from per_model
    union
    select model, 'ours' as origin from registered
    union
    select model, 'ours' as origin from family_of_run

)

select
    a.model,
    a.origin,
    case when a.origin = 'ours' then coalesce(r.family, f.family) end as family,
    case when a.origin = 'ours' then coalesce(r.size, f.size) end as size,
    coalesce(p.datasets_scored, 0) as datasets_scored,
    case when a.origin = 'ours' then r.expected_datasets else s.expected_datasets end as datasets_expected,
    p.mAP50_95,
    p.mAP50,
    p.mAP75,
    p.AR_max_det,
    p.median_train_minutes,
    p.gpu_hours,
    p.median_best_epoch,
    case
        when a.origin <> 'ours' then null
        when r.recipe_conformant = false or p.runs_recipe_conformant = false then false
        when r.recipe_conformant or p.runs_recipe_conformant then true
    end as recipe_conformant,
    coalesce(s.valid_submission, false) as valid_submission,
    case when p.mAP50_95 is not null then rank() over (order by p.mAP50_95 desc nulls last) end as rank
from all_models as a
left join per_model as p on p.model = a.model and p.origin = a.origin
left join registered as r on r.model = a.model and a.origin = 'ours'
left join family_of_run as f on f.model = a.model and a.origin = 'ours'
left join submissions as s on s.model = a.model and s.origin = a.origin
