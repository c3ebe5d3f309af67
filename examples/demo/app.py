"""A tiny service for the toolgate agent demo."""

GREETING = "hello"
PORT = 8080


def greet(name):
    return GREETING + ", " + name
