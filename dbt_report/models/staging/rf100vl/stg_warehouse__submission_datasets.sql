select
    model,
    origin,
    dataset,
    dataset_version,
    num_images,
    num_classes,
    weights_sha256,
    mAP50_95,
    mAP50,
    mAP75,
    AR100,
    AR_max_det,
    wall_seconds
from {{ source('warehouse', 'submission_datasets') }}
