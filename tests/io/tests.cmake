# io tests run real loopback connections (several per test); under valgrind or a loaded
# machine they need more than the default minute.
set(UIW_TEST_TIMEOUT 120)
