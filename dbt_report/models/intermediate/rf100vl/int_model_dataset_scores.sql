-- One row per (model, dataset) score the report uses, ours and imported side by side:
--   ours:     the current test-split score, with the training run whose weights it scored (by run signature)
--             and the kind of device that run trained on;
--   imported: the per-dataset entries of an imported submission file (no runs: train columns stay NULL).
-- `in_campaign` keeps a model's means honest: ours average only over the datasets of the suite their
-- registration targets (a model re-registered from `mini` to `rf100vl` keeps its old mini scores out of its
-- rf100vl means); an unregistered model and every imported entry count whole.

with current_test_scores as (

    -- A replicate (model@seedN) is the model trained again with another seed: its scores feed the seed spread
    -- (rf100vl_seed_spread), never a mean of its own; the model itself (its recipe's seed) is what counts.
    select * from {{ ref('stg_warehouse__scores') }}
    where is_current and split = 'test' and not is_replicate

),

runs as (

    -- One row per signature: an identical re-run leaves two run folders; the current (else latest) one wins.
    select * from {{ ref('int_runs') }}
    qualify row_number() over (
        partition by run_signature order by is_current desc, finished_at desc nulls last, run_dir
    ) = 1

),

ours as (

    select
        s.model,
        'ours' as origin,
        s.dataset,
        s.dataset_version,
        s.mAP50_95,
        s.mAP50,
        s.mAP75,
        s.AR_max_det,
        r.valid_mAP50_95,
        r.best_epoch,
        r.epochs_done,
        r.wall_seconds,
        r.device_kind as device,
        r.recipe_conformant
    from current_test_scores as s
    left join runs as r on r.run_signature = s.run_signature

),

imported as (

    select
        model,
        'imported' as origin,
        dataset,
        dataset_version,
        mAP50_95,
        mAP50,
        mAP75,
        AR_max_det,
        cast(null as double) as valid_mAP50_95,
        cast(null as bigint) as best_epoch,
        cast(null as bigint) as epochs_done,
        cast(null as double) as wall_seconds,
        cast(null as varchar) as device,
        cast(null as boolean) as recipe_conformant
    from {{ ref('stg_warehouse__submission_datasets') }}
    where origin = 'imported'

),

unioned as (

    select * from ours
    union all by name
    select * from imported

)

select
    u.model,
    u.origin,
    u.dataset,
    coalesce(c.domain, '{{ var("not_in_catalog_domain") }}') as domain,
    u.dataset_version,
    u.mAP50_95,
    u.mAP50,
    u.mAP75,
    u.AR_max_det,
    u.valid_mAP50_95,
    u.best_epoch,
    u.epochs_done,
    u.wall_seconds,
    u.wall_seconds / 60.0 as train_minutes,
    u.device,
    u.recipe_conformant,
    (c.dataset is not null) as in_catalog,
    (u.origin = 'imported' or m.model is null or su.dataset is not null) as in_campaign
from unioned as u
left join {{ ref('stg_warehouse__catalog') }} as c on c.dataset = u.dataset
left join {{ ref('stg_warehouse__models') }} as m on m.model = u.model and u.origin = 'ours'
left join {{ ref('stg_warehouse__suites') }} as su on su.suite = m.suite and su.dataset = u.dataset
