test-number = { NUMBER($value, minimumFractionDigits: 2) } GiB
