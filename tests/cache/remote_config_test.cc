#include "cache/remote/remote_config.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <limits>

#include "cache/remote/http_remote.h"

namespace bm::cache {
namespace {

TEST(RemoteConfigTest, SpecGivesUrlAndSettings) {
  RemoteConfig c;
  ASSERT_TRUE(ApplyRemoteSpec(c,
                              "http://h:1/p|remote_write=false|token_env=TOK|remote_timeout=2.5|"
                              "remote_parallel=4")
                  .ok());
  EXPECT_EQ(c.url, "http://h:1/p");
  EXPECT_FALSE(c.write);
  EXPECT_EQ(c.token_env, "TOK");
  EXPECT_DOUBLE_EQ(c.timeout_seconds, 2.5);
  EXPECT_EQ(c.parallel, 4);
  ASSERT_TRUE(ApplyRemoteSpec(c, "off").ok());
  EXPECT_FALSE(c.enabled());
}

TEST(RemoteConfigTest, BadSpecsAndSettingsSayWhatIsWrong) {
  RemoteConfig c;
  Status s = ApplyRemoteSpec(c, "http://h/p|remote_writ=false");
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("did you mean 'remote_write'"), std::string::npos) << s.message();
  s = ApplyRemoteSpec(c, "http://h/p|remote_write=maybe");
  EXPECT_NE(s.message().find("true or false"), std::string::npos) << s.message();
  s = ApplyRemoteSpec(c, "http://h/p|token_env");
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  s = ApplyRemoteSetting(c, "remote_write", nlohmann::json("no"));
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  s = ApplyRemoteSetting(c, "remote_parallel", nlohmann::json(0));
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  // As in the BENCHFILE (remote_parallel = 1.5: "must be an integer"), not cut to 1.
  c.parallel = 16;
  s = ApplyRemoteSpec(c, "http://h/p|remote_parallel=1.5");
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("remote_parallel must be an integer, not '1.5'"), std::string::npos)
      << s.message();
  EXPECT_EQ(c.parallel, 16);
  EXPECT_TRUE(ApplyRemoteSpec(c, "http://h/p|remote_parallel=8").ok());
  EXPECT_EQ(c.parallel, 8);
  for (const char* bad : {"nan", "inf", "-1", "0"}) {
    s = ApplyRemoteSpec(c, std::string("http://h/p|remote_timeout=") + bad);
    EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << bad;
  }
  s = ApplyRemoteSetting(c, "remote_timeout",
                         nlohmann::json(std::numeric_limits<double>::infinity()));
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(ApplyRemoteSetting(c, "remote_write", nlohmann::json(false)).ok());
  EXPECT_TRUE(IsRemoteSetting("ca_file"));
  EXPECT_FALSE(IsRemoteSetting("dir"));
}

TEST(RemoteConfigTest, OpenPicksTheBackendByScheme) {
  RemoteRegistry registry;
  RegisterRemoteBackends(registry);
  RemoteConfig c;
  c.url = "http://127.0.0.1:9/bm";
  auto r = OpenRemote(c, registry);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)->url(), "http://127.0.0.1:9/bm");
  c.url = "file:///tmp/bm-shared";
  r = OpenRemote(c, registry);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)->url(), "file:///tmp/bm-shared");
  c.url = "gopher://x";
  EXPECT_EQ(OpenRemote(c, registry).status().code(), ErrorCode::kInvalidArgument);
}

TEST(RemoteConfigTest, NamedButUnsetVariablesAreErrors) {
  RemoteRegistry registry;
  RegisterRemoteBackends(registry);
  RemoteConfig c;
  c.url = "http://127.0.0.1:9/bm";
  c.token_env = "BM_TEST_SURELY_UNSET_TOKEN";
  unsetenv("BM_TEST_SURELY_UNSET_TOKEN");
  Status s = OpenRemote(c, registry).status();
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("BM_TEST_SURELY_UNSET_TOKEN"), std::string::npos);
  setenv("BM_TEST_SURELY_UNSET_TOKEN", "t", 1);
  EXPECT_TRUE(OpenRemote(c, registry).ok());
  unsetenv("BM_TEST_SURELY_UNSET_TOKEN");
}

TEST(RemoteConfigTest, JsonRoundTrip) {
  RemoteConfig c;
  ASSERT_TRUE(
      ApplyRemoteSpec(c, "https://h/p|remote_write=false|signing_key_env=K|ca_file=/ca").ok());
  auto back = RemoteConfigFromJson(RemoteConfigToJson(c));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->url, "https://h/p");
  EXPECT_FALSE(back->write);
  EXPECT_EQ(back->signing_key_env, "K");
  EXPECT_EQ(back->ca_file, "/ca");
  EXPECT_EQ(back->parallel, c.parallel);
}

TEST(RemoteConfigTest, RedactUrlDropsCredentials) {
  EXPECT_EQ(RedactUrl("https://u:pw@h:1/x"), "https://h:1/x");
  EXPECT_EQ(RedactUrl("http://h/x@y"), "http://h/x@y");
}

}  // namespace
}  // namespace bm::cache
