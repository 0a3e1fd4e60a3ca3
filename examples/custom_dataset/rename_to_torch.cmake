# Turns the libtensor example into the libtorch program it was ported from: the namespace
# tensor:: becomes torch:: and the umbrella header <tensor/tensor.h> becomes <torch/torch.h>;
# nothing else changes. Run with -DIN=main.cpp -DOUT=renamed.cpp.
file(READ ${IN} text)
string(REPLACE "<tensor/tensor.h>" "<torch/torch.h>" text "${text}")
string(REPLACE "tensor::" "torch::" text "${text}")
file(WRITE ${OUT} "${text}")
