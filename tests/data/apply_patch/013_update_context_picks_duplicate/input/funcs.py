def first():
    return 1

def second():
    return 1

def third():
    return 1
