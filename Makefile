# widedeep - `make demo` runs the demo, `make test` runs the test suite.
# Both install missing build dependencies first (tools/install-deps.sh).
CC      ?= cc
CXX     ?= c++
CFLAGS  ?= -O2 -g
WARN    := -Wall -Wextra
LDLIBS  := -lzstd -lpthread -lm
SAN     := -fsanitize=address,undefined -fno-omit-frame-pointer
DATA    ?= ../shared/data
B       := build
HDR     := widedeep.h

.PHONY: all deps demo test clean
all: $(B)/wd

deps:
	@CC=$(CC) bash tools/install-deps.sh

$(B):
	@mkdir -p $(B)

$(B)/wd: tools/wd.c $(HDR) | $(B)
	$(CC) -std=c11 $(CFLAGS) $(WARN) -o $@ tools/wd.c $(LDLIBS)

# test binaries carry ASan + UBSan
$(B)/test_wd: tests/test_wd.c tests/testlib.h $(HDR) | $(B)
	$(CC) -std=c11 -O1 -g $(SAN) $(WARN) -o $@ tests/test_wd.c $(LDLIBS)

$(B)/test_loader: tests/test_loader.c tests/testlib.h $(HDR) | $(B)
	$(CC) -std=c11 -O1 -g $(SAN) $(WARN) -o $@ tests/test_loader.c $(LDLIBS)

$(B)/test_train: tests/test_train.c tests/testlib.h $(HDR) | $(B)
	$(CC) -std=c11 -O1 -g $(SAN) $(WARN) -o $@ tests/test_train.c $(LDLIBS)

# the threaded tests (loader, communicator, trainer) again under ThreadSanitizer
TSAN_CC := $(shell command -v clang >/dev/null && echo clang || echo $(CC))
$(B)/%_tsan: tests/%.c tests/testlib.h $(HDR) | $(B)
	$(TSAN_CC) -std=c11 -O1 -g -fsanitize=thread $(WARN) -o $@ $< $(LDLIBS)

$(B)/test_cpp: tests/test_cpp.cpp $(HDR) | $(B)
	$(CXX) -std=c++17 -O1 -g $(SAN) $(WARN) -o $@ tests/test_cpp.cpp $(LDLIBS)

demo: deps
	@$(MAKE) --no-print-directory $(B)/wd
	bash tools/demo.sh $(B)/wd $(B)/demo

test: deps
	@$(MAKE) --no-print-directory $(B)/wd $(B)/test_wd $(B)/test_cpp $(B)/test_loader $(B)/test_train \
		$(B)/test_loader_tsan $(B)/test_train_tsan
	bash tests/run.sh $(B) $(DATA)

clean:
	rm -rf $(B)
