select
    suite,
    dataset
from {{ source('warehouse', 'suites') }}
