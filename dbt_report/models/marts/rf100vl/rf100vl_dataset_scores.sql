-- Per model and dataset: the score, its domain and (ours) the training run behind it.

select
    model,
    origin,
    dataset,
    domain,
    dataset_version,
    mAP50_95,
    mAP50,
    mAP75,
    AR_max_det,
    valid_mAP50_95,
    best_epoch,
    train_minutes,
    in_campaign
from {{ ref('int_model_dataset_scores') }}
