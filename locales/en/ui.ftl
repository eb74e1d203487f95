# Test string for number formatting through Fluent.
test-number = { NUMBER($value, minimumFractionDigits: 2) } GiB
