"""The embedded runtime: the real handlers on an in-process AWS (moto), for `make demo`,
`lambda-workflows dev` and the test kit's ``backend="aws"``. Needs the dev extra (moto, pyyaml).
"""
