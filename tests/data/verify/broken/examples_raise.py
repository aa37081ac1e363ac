x = 1
raise RuntimeError("this examples file cannot be loaded\nsecond line")
