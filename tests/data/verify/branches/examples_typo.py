import numpy as np

EXAMPLES = {"scael": [(np.float32(2.0), np.array([1.0, 2.0], np.float32))]}
