int main() { return 0; }  // anchor for the test executables' shared precompiled header
