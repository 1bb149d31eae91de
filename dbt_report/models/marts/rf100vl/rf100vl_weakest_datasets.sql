-- The 5 lowest-mAP50-95 campaign datasets of each model (ties broken by dataset name).

with ranked as (

    select
        model,
        origin,
        row_number() over (partition by model order by mAP50_95, dataset) as rank,
        dataset,
        domain,
        mAP50_95
    from {{ ref('int_model_dataset_scores') }}
    where in_campaign and mAP50_95 is not null

)

select * from ranked
where rank <= 5
