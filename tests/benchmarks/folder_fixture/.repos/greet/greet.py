"""Greetings."""


def greet(name):
    """A greeting for name; strangers (an empty name) are greeted too."""
    return "Hello, " + name + "!"
