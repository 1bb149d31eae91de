select
    model,
    family,
    size,
    mAP50_95,
    source
from {{ source('warehouse', 'published') }}
