// The IDL of examples/thrift.yaml: Apache's tutorial calculator, widened with containers and a
// oneway call.
include "shared.thrift"

namespace py calc
namespace java org.example.calc

typedef i32 Int

const i32 ANSWER = 42

enum Operation {
  ADD = 1,
  SUBTRACT = 2,
  MULTIPLY = 3,
  DIVIDE = 4
}

struct Work {
  1: Int num1 = 0,
  2: required Int num2,
  3: Operation op,
  4: optional string comment,
}

exception InvalidOperation {
  1: i32 whatOp,
  2: string why
}

struct Stats {
  1: list<i64> values,
  2: map<string, i32> counts,
  3: set<string> tags,
  4: bool flag,
  5: double ratio,
  6: Operation last,
}

service Calculator extends shared.SharedService {
  void ping(),
  Int add(1: Int num1, 2: Int num2),
  Int calculate(1: i32 logid, 2: Work w) throws (1: InvalidOperation ouch),
  Stats summarize(1: list<Work> works, 2: map<string, i32> weights, 3: bool flag),
  oneway void zip(1: i32 n)
}
