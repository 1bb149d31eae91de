{#- Generic tests dbt-utils would give us; written here because packages cannot be fetched offline. -#}

{#- No two rows share the values of `columns` (a composite key). Fails with one row per duplicated key. -#}
{% test unique_combination(model, columns) %}
select {{ columns | join(', ') }}, count(*) as n_rows
from {{ model }}
group by {{ columns | join(', ') }}
having count(*) > 1
{% endtest %}

{#- Every non-NULL value lies in [min_value, max_value]; NULL passes (pair with not_null when it must not be). -#}
{% test values_between(model, column_name, min_value, max_value) %}
select {{ column_name }}
from {{ model }}
where {{ column_name }} < {{ min_value }} or {{ column_name }} > {{ max_value }}
{% endtest %}
