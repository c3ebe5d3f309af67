def greet():
    print("hello")
    print("world")
    return 0
