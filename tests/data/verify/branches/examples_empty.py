EXAMPLES = {"scale": []}
