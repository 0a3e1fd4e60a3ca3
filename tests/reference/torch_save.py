"""Writes the torch.save fixtures of tests/test_pickle.cpp into tests/reference/torch_save/, each
in the zip format and the legacy one (_use_new_zipfile_serialization=False):

  mlp.pt, mlp_legacy.pt        model.state_dict() of the tiny Net below (Linear, BatchNorm1d
                               with trained running stats, Linear), for tensor::load(module, path)
  mlp_proto5.pt                the same with pickle protocol 5
  mixed.pt, mixed_legacy.pt    a dict: the same state_dict, a fixed input and the model's output
                               on it (eval mode), one tensor per dtype, a transposed, a sliced
                               (storage offset) and an expanded (stride 0) tensor, two tensors
                               viewing one storage, a Parameter, a 0-dim and an empty tensor,
                               and plain values (list, tuple, nested dict, int, float, str,
                               bool, None)
  tensor.pt, list.pt           torch.save(tensor) and torch.save([tensor, tensor])
  scripted.pt                  torch.jit.save of a scripted Linear (TorchScript: refused)

The loose tensors' values follow formulas the C++ test recomputes (arange-based), so the test
checks them independently of this script. Run: python3 tests/reference/torch_save.py (torch 2.x).
"""
import collections
import os

import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_save")


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 8)
        self.bn = torch.nn.BatchNorm1d(8)
        self.fc2 = torch.nn.Linear(8, 2)

    def forward(self, x):
        return self.fc2(torch.relu(self.bn(self.fc1(x))))


def save_both(obj, name):
    torch.save(obj, os.path.join(OUT, name + ".pt"))
    torch.save(obj, os.path.join(OUT, name + "_legacy.pt"), _use_new_zipfile_serialization=False)


def main():
    os.makedirs(OUT, exist_ok=True)
    torch.manual_seed(0)
    net = Net()
    # A few training steps so that the running stats and num_batches_tracked are not defaults.
    net.train()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for _ in range(3):
        x = torch.randn(16, 4)
        loss = net(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    net.eval()
    x = torch.randn(5, 4)
    with torch.no_grad():
        y = net(x)
    sd = net.state_dict()
    save_both(sd, "mlp")
    # Protocol 5 (torch.save's default is 2): FRAME, MEMOIZE, SHORT_BINUNICODE, STACK_GLOBAL.
    torch.save(sd, os.path.join(OUT, "mlp_proto5.pt"), pickle_protocol=5)

    six = torch.arange(-3, 3)
    dtypes = collections.OrderedDict(
        f32=torch.float32, f64=torch.float64, f16=torch.float16, bf16=torch.bfloat16, i8=torch.int8,
        i16=torch.int16, i32=torch.int32, i64=torch.int64, u8=torch.uint8, c64=torch.complex64,
        c128=torch.complex128)
    by_dtype = {}
    for name, dt in dtypes.items():
        if dt.is_complex:
            by_dtype[name] = torch.complex(six.double(), -0.5 * six.double()).to(dt)  # k - 0.5k i
        elif dt == torch.uint8:
            by_dtype[name] = (six + 3).to(dt)  # 0..5
        else:
            by_dtype[name] = (six.double() * (0.5 if dt.is_floating_point else 1)).to(dt)  # k/2 or k
    by_dtype["bool"] = six % 2 == 0

    base = torch.arange(8, dtype=torch.float64)
    mixed = {
        "state_dict": sd,
        "input": x,
        "output": y,
        "dtypes": by_dtype,
        "transposed": torch.arange(12, dtype=torch.float32).reshape(3, 4).t(),  # strides (1, 4)
        "sliced": torch.arange(10, dtype=torch.int64)[3:7],                   # storage offset 3
        "expanded": torch.tensor([1.5, -2.0]).expand(3, 2),                     # stride (0, 1)
        "shared_a": base[2:6],                                                  # one storage ...
        "shared_b": base.view(2, 4),                                            # ... two views
        "param": torch.nn.Parameter(torch.tensor([0.25, 0.5])),
        "scalar": torch.tensor(3.25, dtype=torch.float64),
        "empty": torch.zeros(0, 3),
        "values": [1, -2, 2**40, 0.125, "text", True, None, (7, "x")],
        "nested": {"epoch": 3, "lr": 1e-3},
    }
    save_both(mixed, "mixed")
    torch.save(torch.arange(6, dtype=torch.int32).reshape(2, 3), os.path.join(OUT, "tensor.pt"))
    torch.save([torch.ones(2), torch.arange(3)], os.path.join(OUT, "list.pt"))
    torch.jit.save(torch.jit.script(torch.nn.Linear(2, 1)), os.path.join(OUT, "scripted.pt"))


if __name__ == "__main__":
    main()
