"""The benchmarks and the checks that run them: parameters, programs from the Spack view,
output parsers, sanity and performance values."""
