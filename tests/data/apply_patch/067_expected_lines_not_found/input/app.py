def present():
    pass
