select
    dataset,
    domain,
    rf20vl,
    num_classes,
    num_images,
    test_images,
    license
from {{ source('warehouse', 'catalog') }}
