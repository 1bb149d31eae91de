select
    model,
    family,
    size,
    mAP50_95,
    source,
    libreyolo_family,
    size_rank
from {{ source('warehouse', 'published') }}
