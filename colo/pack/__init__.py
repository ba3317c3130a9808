"""`colo pack`: from the models a team needs, with their minimums, to the cheapest stack `colo plan` accepts.

requirements (what is asked) -> candidates (priced instance types) -> packings (pairs judged by the plan,
through engine, the one module that calls colo's planning engine) -> solver (HiGHS) -> search (layouts
planned whole) -> explain (why nothing cheaper) -> report and stackfile (what is shown and written).
"""
