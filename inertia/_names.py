"""Names the command line offers as choices, kept free of JAX so argument errors answer at once.

tests/test_cli_fast.py checks each tuple against the registry it mirrors.
"""
VI_METHODS = ("bam", "dgg-prox", "dgg-stl", "exact-apg", "fb-gvi", "fd-proj", "fd-prox", "ngvi",
              "ngvi-reparam", "paired-proj", "paired-prox", "price-spgd", "price-stl-proj",
              "sqrt-ngvi", "stl-proj", "svrgvi")  # vi.METHODS
VI_MODELS = ("gaussian-kappa", "logistic", "probit", "graph-probit")  # targets.zoo.MODELS
MCMC_METHODS = ("hfhr-exact", "hfhr", "hfhr-split", "klmc", "ula", "hfhr-rm", "uld-rm")  # mcmc.REGISTRY
SGMCMC_TUNINGS = ("dq-exact", "ct", "dq-const", "lr-ws",  # sgmcmc.tuning.METHODS
                  "ct-code", "dq-const-code", "lr-ws-code", "dq-exact-code")
DATASETS = ("banknote", "boston", "diabetes", "german", "ionosphere", "pima", "sonar", "wdbc")
CLASSIFICATION = ("banknote", "german", "ionosphere", "pima", "sonar", "wdbc")
