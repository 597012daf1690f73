//===- AotLinkerTest.cpp - model.so linking and loading on hand-made images ===//
#include "compiler/codegen/aot/AotLinker.h"
#include "compiler/codegen/HugePages.h"
#include "runtime/AotLoader.h"
#include "test/unit/HugePageProbe.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <unistd.h>

using namespace octet;

namespace {

/// An image that is not a Plan: distinct bytes per section, and code that
/// returns 42 (mov eax, 42; ret) so the test can call it from .text.
rt::PlanImage handMadeImage() {
  rt::PlanImage image;
  const std::string plan = "not a plan, but bytes to find again";
  image.plan.assign(plan.begin(), plan.end());
  for (int i = 0; i < 10000; ++i)
    image.constants.push_back(uint8_t(i * 7 + 3));
  image.code = {0xb8, 0x2a, 0x00, 0x00, 0x00, 0xc3};
  return image;
}

std::vector<uint8_t> readBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

void writeBytes(const std::string &path, const std::vector<uint8_t> &bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char *>(bytes.data()), std::streamsize(bytes.size()));
}

/// The permissions ("r-xp") of the mapping holding `address`, from /proc/self/maps.
std::string permissionsOf(const void *address) {
  std::ifstream maps("/proc/self/maps");
  const auto at = reinterpret_cast<uintptr_t>(address);
  for (std::string line; std::getline(maps, line);) {
    uintptr_t begin = 0, end = 0;
    char perms[8] = {};
    if (std::sscanf(line.c_str(), "%lx-%lx %7s", &begin, &end, perms) == 3 && at >= begin &&
        at < end)
      return perms;
  }
  return "";
}

class AotLinkerTest : public ::testing::Test {
protected:
  void SetUp() override {
    char pattern[] = "/tmp/octet-aot-linker-test-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }
  std::string path(const std::string &name) const { return dir_ + "/" + name; }
  std::string dir_;
};

TEST_F(AotLinkerTest, SectionsComeBackWhereTheDescriptorSays) {
  const rt::PlanImage image = handMadeImage();
  aot::LinkReport report;
  rt::Status status = aot::linkSharedObject(image, path("model.so"), {}, &report);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(report.bytes, readBytes(path("model.so")).size());
  EXPECT_FALSE(report.compiler.empty());

  std::shared_ptr<const void> library;
  rt::PlanImageView view;
  status = rt::mapAotModel(path("model.so"), library, view);
  ASSERT_TRUE(status.ok()) << status.message();
  ASSERT_EQ(view.planBytes, image.plan.size());
  ASSERT_EQ(view.constantsBytes, image.constants.size());
  ASSERT_EQ(view.codeBytes, image.code.size());
  EXPECT_TRUE(std::equal(image.plan.begin(), image.plan.end(), view.plan));
  EXPECT_TRUE(std::equal(image.constants.begin(), image.constants.end(), view.constants));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(view.constants) % 4096, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(view.code) % 64, 0u);
  // The code runs from the library's text, which is not writable; the
  // weights are read-only and not executable.
  EXPECT_EQ(permissionsOf(view.code), "r-xp");
  EXPECT_EQ(permissionsOf(view.constants), "r--p");
  auto fortyTwo = reinterpret_cast<int (*)()>(const_cast<uint8_t *>(view.code));
  EXPECT_EQ(fortyTwo(), 42);
}

TEST_F(AotLinkerTest, PlacedConstantsAreAHugePageCopy) {
  // 3 MiB of constants: copied onto huge pages, the file's pages dropped from
  // this process, the library kept open by the new owner.
  rt::PlanImage image = handMadeImage();
  image.constants.resize(size_t(3) << 20);
  for (size_t i = 0; i < image.constants.size(); ++i)
    image.constants[i] = uint8_t(i * 131 + (i >> 12));
  ASSERT_TRUE(aot::linkSharedObject(image, path("model.so"), {}).ok());
  std::shared_ptr<const void> owner;
  rt::PlanImageView view;
  ASSERT_TRUE(rt::mapAotModel(path("model.so"), owner, view).ok());
  const uint8_t *mapped = view.constants;
  std::weak_ptr<const void> library = owner;
  rt::placeConstants(view, owner);
  ASSERT_TRUE(std::equal(image.constants.begin(), image.constants.end(), view.constants));
  if (!octet::hugePagesAvailable()) {
    EXPECT_EQ(view.constants, mapped) << "copied without huge pages to gain";
    GTEST_SKIP() << "no transparent huge pages on this host";
  }
  const auto placed = reinterpret_cast<uintptr_t>(view.constants);
  EXPECT_NE(view.constants, mapped);
  EXPECT_EQ(placed % octet::kHugePageBytes, 0u);
  EXPECT_EQ(octet::test::hugePageEligible(placed), 1);
  EXPECT_LT(octet::test::smapsField(reinterpret_cast<uintptr_t>(mapped) + (1 << 20), "Rss"), 512)
      << "kB of the file's pages still mapped in";
  EXPECT_FALSE(library.expired());
  owner.reset();
  EXPECT_TRUE(library.expired()) << "the copy's owner did not release the library";

  // A section under 2 MiB stays where it is mapped.
  ASSERT_TRUE(aot::linkSharedObject(handMadeImage(), path("small.so"), {}).ok());
  ASSERT_TRUE(rt::mapAotModel(path("small.so"), owner, view).ok());
  mapped = view.constants;
  rt::placeConstants(view, owner);
  EXPECT_EQ(view.constants, mapped);
}

TEST_F(AotLinkerTest, LinkingIsReproducible) {
  const rt::PlanImage image = handMadeImage();
  ASSERT_TRUE(aot::linkSharedObject(image, path("a.so"), {}).ok());
  ASSERT_TRUE(aot::linkSharedObject(image, path("b.so"), {}).ok());
  EXPECT_EQ(readBytes(path("a.so")), readBytes(path("b.so")));
  rt::PlanImage other = image;
  other.constants[5000] ^= 1;
  ASSERT_TRUE(aot::linkSharedObject(other, path("c.so"), {}).ok());
  EXPECT_NE(readBytes(path("a.so")), readBytes(path("c.so")));
}

TEST_F(AotLinkerTest, ExportsOnlyTheCApiAndTheDescriptor) {
  ASSERT_TRUE(aot::linkSharedObject(handMadeImage(), path("model.so"), {}).ok());
  const std::string list = path("symbols.txt");
  ASSERT_EQ(
      std::system(("nm -D --defined-only '" + path("model.so") + "' > '" + list + "'").c_str()), 0);
  std::ifstream symbols(list);
  int exported = 0;
  for (std::string line; std::getline(symbols, line);) {
    std::string name = line.substr(line.rfind(' ') + 1);
    EXPECT_EQ(name.rfind("octet_", 0), 0u) << "exported: " << line;
    ++exported;
  }
  EXPECT_GT(exported, 10); // the C API
}

TEST_F(AotLinkerTest, AnImageThatIsNoPlanIsAClearError) {
  ASSERT_TRUE(aot::linkSharedObject(handMadeImage(), path("model.so"), {}).ok());
  std::unique_ptr<rt::Plan> plan;
  rt::Status status = rt::openAotModel(path("model.so"), plan);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("not an Octet compiled model"), std::string::npos)
      << status.message();
  EXPECT_EQ(plan, nullptr);
}

TEST_F(AotLinkerTest, TruncatedAndForeignFilesAreClearErrors) {
  ASSERT_TRUE(aot::linkSharedObject(handMadeImage(), path("model.so"), {}).ok());
  std::vector<uint8_t> bytes = readBytes(path("model.so"));
  for (size_t keep : {size_t(0), size_t(40), size_t(200), bytes.size() / 2, bytes.size() - 1}) {
    writeBytes(path("cut.so"), std::vector<uint8_t>(bytes.begin(), bytes.begin() + keep));
    rt::Status status = rt::checkSharedObjectFile(path("cut.so"));
    EXPECT_FALSE(status.ok()) << "kept " << keep << " bytes";
    EXPECT_NE(status.message().find("is not a loadable Octet model.so"), std::string::npos)
        << status.message();
  }
  std::vector<uint8_t> wrongMachine = bytes;
  wrongMachine[18] = 0xb7; // e_machine: AArch64
  writeBytes(path("arm.so"), wrongMachine);
  EXPECT_NE(rt::checkSharedObjectFile(path("arm.so")).message().find("not a 64-bit x86-64"),
            std::string::npos);
  writeBytes(path("text.so"), std::vector<uint8_t>(100, 'x'));
  EXPECT_NE(rt::checkSharedObjectFile(path("text.so")).message().find("not an ELF file"),
            std::string::npos);
  EXPECT_TRUE(rt::checkSharedObjectFile(path("model.so")).ok());
}

TEST_F(AotLinkerTest, ADescriptorOfAnotherLayoutIsRefused) {
  rt::AotImageDescriptor descriptor{};
  std::memcpy(descriptor.magic, rt::kAotImageMagic, sizeof(descriptor.magic));
  descriptor.layoutVersion = rt::kAotImageLayoutVersion + 1;
  rt::PlanImageView view;
  rt::Status status = rt::viewOfDescriptor(descriptor, view);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("layout version"), std::string::npos) << status.message();
  descriptor.magic[0] = 'X';
  EXPECT_NE(rt::viewOfDescriptor(descriptor, view).message().find("wrong magic"),
            std::string::npos);
}

TEST_F(AotLinkerTest, MissingToolsAreClearErrors) {
  const char *savedCc = std::getenv("CC");
  const std::string saved = savedCc ? savedCc : "";
  ::setenv("CC", "/nonexistent/octet-cc", 1);
  rt::Status status = aot::linkSharedObject(handMadeImage(), path("model.so"), {});
  EXPECT_NE(status.message().find("no C compiler"), std::string::npos) << status.message();
  ::setenv("CC", "cc -Wl,--octet-no-such-flag", 1);
  status = aot::linkSharedObject(handMadeImage(), path("model.so"), {});
  EXPECT_NE(status.message().find("linking the model.so failed"), std::string::npos);
  EXPECT_NE(status.message().find("octet-no-such-flag"), std::string::npos) << status.message();
  EXPECT_NE(::access(path("model.so").c_str(), F_OK), 0) << "a failed link wrote the output";
  if (savedCc)
    ::setenv("CC", saved.c_str(), 1);
  else
    ::unsetenv("CC");

  ::setenv("OCTET_AOT_RUNTIME_DIR", path("nothing").c_str(), 1);
  status = aot::linkSharedObject(handMadeImage(), path("model.so"), {});
  ::unsetenv("OCTET_AOT_RUNTIME_DIR");
  EXPECT_NE(status.message().find("the AOT runtime is incomplete"), std::string::npos)
      << status.message();
}

} // namespace
