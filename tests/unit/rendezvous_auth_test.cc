// The TCP rendezvous store admits only holders of the group's secret: a
// stranger's connection reads and writes nothing, a rank with the wrong
// secret is refused with a clear error, and a flood of strangers does not
// shut a joining rank out.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "kernels/comm/store_wire.h"
#include "kernels/comm/tcp_store.h"
#include "tests/unit/free_port.h"

namespace tessera {
namespace {

int connect_to(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(uint16_t(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Everything the server sends before it closes (or 3 s pass).
std::string read_until_closed(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    timeval tv{3, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    out.append(buf, size_t(n));
  }
  return out;
}

TEST(RendezvousAuth, AStrangerReadsAndWritesNothing) {
  const int port = free_loopback_port();
  cpu::TcpStore leader("127.0.0.1:" + std::to_string(port), true, std::chrono::seconds(5), "group-secret");
  const std::string config = "models: [{name: m, path: /models/m.gguf}]";
  leader.set("tessera/config", std::vector<char>(config.begin(), config.end()));
  // The old protocol's get, sent straight away: read as a failed proof.
  const int fd = connect_to(port);
  ASSERT_GE(fd, 0);
  std::string ask = "G";
  const uint32_t len = 14;
  ask.append(reinterpret_cast<const char*>(&len), 4);
  ask += "tessera/config";
  ask.append(64, 'x');
  ASSERT_EQ(send(fd, ask.data(), ask.size(), MSG_NOSIGNAL), ssize_t(ask.size()));
  const std::string reply = read_until_closed(fd);
  close(fd);
  EXPECT_EQ(reply.substr(0, 4), "TSS1");
  EXPECT_EQ(reply.size(), 4u + 32u + 1u) << "the stranger was sent more than the handshake and its refusal";
  EXPECT_EQ(reply.find("models"), std::string::npos);
  // The value is still the leader's.
  const std::vector<char> kept = leader.get("tessera/config");
  EXPECT_EQ(std::string(kept.begin(), kept.end()), config);
}

TEST(RendezvousAuth, AWrongSecretIsRefusedAtOnceNaming) {
  const int port = free_loopback_port();
  cpu::TcpStore leader("127.0.0.1:" + std::to_string(port), true, std::chrono::seconds(5), "group-secret");
  const auto start = std::chrono::steady_clock::now();
  try {
    cpu::TcpStore impostor("127.0.0.1:" + std::to_string(port), false, std::chrono::seconds(30), "another-secret");
    FAIL() << "a rank with the wrong secret joined";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("secret does not match"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5)) << "refused only after the join timeout";
  EXPECT_THROW(cpu::TcpStore("127.0.0.1:1", false, std::chrono::seconds(1), ""), std::runtime_error);
}

TEST(RendezvousAuth, RanksWithTheSecretShareValues) {
  const int port = free_loopback_port();
  cpu::TcpStore leader("127.0.0.1:" + std::to_string(port), true, std::chrono::seconds(5), "group-secret");
  cpu::TcpStore worker("127.0.0.1:" + std::to_string(port), false, std::chrono::seconds(5), "group-secret");
  leader.set("k", {'v', '1'});
  EXPECT_EQ(worker.get("k"), (std::vector<char>{'v', '1'}));
  worker.set("w", {'x'});
  EXPECT_EQ(leader.get("w"), (std::vector<char>{'x'}));
}

TEST(RendezvousAuth, AFloodOfStrangersDoesNotShutARankOut) {
  const int port = free_loopback_port();
  cpu::TcpStore leader("127.0.0.1:" + std::to_string(port), true, std::chrono::seconds(5), "group-secret");
  std::vector<int> flood;
  for (int i = 0; i < 300; ++i) {
    const int fd = connect_to(port);
    if (fd >= 0) flood.push_back(fd);
  }
  // The strangers hold at most a few unproven slots, each for at most the
  // handshake's two seconds; the rank joins within its timeout.
  cpu::TcpStore worker("127.0.0.1:" + std::to_string(port), false, std::chrono::seconds(10), "group-secret");
  leader.set("k", {'1'});
  EXPECT_EQ(worker.get("k"), (std::vector<char>{'1'}));
  for (int fd : flood) close(fd);
}

TEST(StoreWire, SealedValuesOpenOnlyUnderTheirKeyAndSecret) {
  const std::vector<char> value = {'a', 'b', 'c'};
  const std::vector<char> sealed = cpu::seal_value("s", "key", value);
  std::vector<char> out;
  EXPECT_TRUE(cpu::open_sealed_value("s", "key", sealed, &out));
  EXPECT_EQ(out, value);
  EXPECT_FALSE(cpu::open_sealed_value("s", "other", sealed, &out));
  EXPECT_FALSE(cpu::open_sealed_value("t", "key", sealed, &out));
  std::vector<char> tampered = sealed;
  tampered.back() ^= 1;
  EXPECT_FALSE(cpu::open_sealed_value("s", "key", tampered, &out));
}

}  // namespace
}  // namespace tessera
