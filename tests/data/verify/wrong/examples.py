import numpy as np

EXAMPLES = {
    "clip_swapped": [(-0.5, 0.5, 2.0), (np.float32(-1.0), np.float32(0.25), np.array([0.5, 3.0], np.float32))],
    "clip_none_misplaced": [(-0.5, 0.5, 2.0)],
    "scaled_mul_dropped": [(2.0, np.array([1.0, 2.0], np.float32), np.array([3.0, -1.0], np.float32))],
    "soft_clip_sign": [(np.array([0.3, -2.0], np.float32), 1.5)],
    "clip_correct": [(-0.5, 0.5, 2.0), (-1.0, 1.0, 0.3)],
}
