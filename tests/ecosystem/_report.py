"""Shared by the ecosystem scripts: print named results as one JSON line on stdout."""
import json

import numpy as np


def report(**results):
    def conv(v):
        a = np.asarray(v)
        return {"dtype": str(a.dtype), "shape": list(a.shape),
                "values": a.astype(np.float64).ravel().tolist()}
    print("ECOSYSTEM-RESULT " + json.dumps({k: conv(v) for k, v in results.items()}))
