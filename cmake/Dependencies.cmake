# Dependencies come from Debian packages (scripts/setup.sh installs them).
find_package(fmt REQUIRED)
find_package(hwy REQUIRED)
find_package(OpenMP REQUIRED)
find_package(dnnl REQUIRED)
