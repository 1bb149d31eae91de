-- Per model and RF100-VL domain: unweighted means over the model's campaign datasets of that domain.

select
    model,
    origin,
    domain,
    count(*) as datasets,
    avg(mAP50_95) as mAP50_95,
    avg(mAP50) as mAP50
from {{ ref('int_model_dataset_scores') }}
where in_campaign
group by model, origin, domain
