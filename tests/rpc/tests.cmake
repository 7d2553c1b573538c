# The RPC layer's tests run a server and clients on loopback (ports chosen by the kernel).
set(UIW_TEST_TIMEOUT 120)
