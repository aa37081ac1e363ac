import numpy as np

# one example's arguments without the list around them
EXAMPLES = {"scale": (np.float32(2.0), np.array([1.0, 2.0], np.float32))}
