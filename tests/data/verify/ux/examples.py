import numpy as np

from vjp_migrate.verify import call

X = np.array([0.5, -2.0, 3.0], dtype=np.float32)

EXAMPLES = {
    "clip_kw": [
        call(np.float32(-1.0), np.float32(1.0), x=X),
        call(np.float32(-0.5), hi=np.float32(0.5), x=X, scale=2.0),
    ],
    "placed": [(np.float32(2.0), X)],
    "logged": [(np.float32(2.0), X)],
}
