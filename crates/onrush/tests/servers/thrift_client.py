"""A Thrift client onrush did not write, for the `builtin` module of crates/onrush/tests/suite.rs:
Apache Thrift's own Python library, on code Apache's `thrift` compiler generated from
examples/idl/calculator.thrift (the test generates it and puts it on PYTHONPATH), calling the
built-in server and checking every answer.

    thrift_client.py PORT PROTOCOL TRANSPORT MODE ROUNDS   # binary|compact, framed|buffered,
                                                          # plain|multiplexed

Each round makes 8 calls (ping, add, calculate, calculate throwing InvalidOperation, calculate
with an unknown op: a TApplicationException, summarize, getStruct, oneway zip). Prints
{"calls": N} and exits 0 when every answer was right; exits 1 naming the first wrong one.
"""
import json
import sys

from calc import Calculator
from calc.ttypes import InvalidOperation, Operation, Work
from thrift.Thrift import TApplicationException
from thrift.protocol import TBinaryProtocol, TCompactProtocol, TMultiplexedProtocol
from thrift.transport import TSocket, TTransport


def expect(got, want, what):
    if got != want:
        sys.exit("%s: got %r, expected %r" % (what, got, want))


def main():
    port, protocol, transport, mode, rounds = sys.argv[1:6]
    sock = TSocket.TSocket("127.0.0.1", int(port))
    trans = (TTransport.TFramedTransport if transport == "framed" else TTransport.TBufferedTransport)(sock)
    proto = (TBinaryProtocol.TBinaryProtocol if protocol == "binary" else TCompactProtocol.TCompactProtocol)(trans)
    if mode == "multiplexed":
        proto = TMultiplexedProtocol.TMultiplexedProtocol(proto, "Calculator")
    client = Calculator.Client(proto)
    trans.open()
    calls = 0
    for i in range(int(rounds)):
        client.ping()
        expect(client.add(i, 2), i + 2, "add")
        expect(client.calculate(i, Work(num1=i, num2=3, op=Operation.MULTIPLY)), 3 * i, "calculate")
        try:
            client.calculate(1, Work(num1=1, num2=0, op=Operation.DIVIDE))
            sys.exit("divide by 0: no exception")
        except InvalidOperation as e:
            expect((e.whatOp, e.why), (Operation.DIVIDE, "Cannot divide by 0"), "InvalidOperation")
        try:
            client.calculate(1, Work(num1=1, num2=1, op=99))
            sys.exit("op 99: no exception")
        except TApplicationException as e:
            expect(e.type, TApplicationException.INTERNAL_ERROR, "unknown op")
        s = client.summarize(
            [Work(num1=1, num2=2, op=Operation.ADD), Work(num1=3, num2=4, op=Operation.MULTIPLY, comment="big")],
            {"a": 1, "b": 2},
            True,
        )
        expect(
            (s.values, s.counts, s.tags, s.flag, s.ratio, s.last),
            ([3, 12], {"ADD": 1, "MULTIPLY": 1}, {"big"}, True, 1.5, Operation.MULTIPLY),
            "summarize",
        )
        g = client.getStruct(i)
        expect((g.key, g.value), (i, str(3 * i)), "getStruct")
        client.zip(i)
        calls += 8
    # The oneway zip is not answered: a last ping makes sure the server read it before we close.
    client.ping()
    calls += 1
    trans.close()
    print(json.dumps({"calls": calls}))


main()
