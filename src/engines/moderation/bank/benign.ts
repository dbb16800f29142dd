// The example bank's benign look-alikes (format: ../examples.ts): text that shares words or topics
// with the harmful sections and is not harmful — technical jargon, idioms, sport, cooking,
// medicine, education and recovery stories about self-harm, news and history of violence, fiction
// and games, neutral and supportive text about groups, legal and safety questions.
export const BENIGN_EXAMPLES = String.raw`
# benign
// software and computing
How do I kill the process that is using port 8080
Kill all child processes when the parent exits
The script terminates any thread that hangs for more than a minute
Use kill -9 only when the process ignores SIGTERM
My laptop keeps crashing when I open too many tabs
The server died overnight and we had to restart it
Abort the build if any test fails
Execute the migration before deploying the new version
The garbage collector kills off unused objects
We need to nuke the cache and rebuild the index
The app hangs whenever I click the export button
Force quit the frozen application from the task manager
Our penetration test found an injection vulnerability in the login form
The attacker model in this threat analysis assumes a compromised laptop
Shoot me a message when the deploy finishes
The daemon spawns workers and reaps them when they exit
Fire the webhook after the payment succeeds
This commit will break the build if we merge it now
The function throws an exception when the input is empty
Purge the CDN cache after you update the stylesheet
Drop the table and recreate it with the new schema
Slay the technical debt before the next release
The zombie processes are piling up on the build server
Head-of-line blocking is killing our throughput
Please destroy the old virtual machines to save money
The bug was a race condition that corrupted memory
Exploit mitigation is enabled by default in the kernel
The firewall blocks any attack traffic from that subnet
Hard reset the router if the connection keeps dropping
Strip the whitespace from every line before parsing
Dump the heap to find out what is leaking memory
This regex is murdering the CPU on long inputs
Execute order 66 is just a Star Wars joke in our deploy channel
How do I safely wipe a hard drive before recycling it
// photography, film, performance
We're going to shoot the wedding photos at sunset
She shot the whole film on an old 16mm camera
Blow up that picture so we can print it as a poster
The director wants to reshoot the final scene
That comedian absolutely killed it last night
The band bombed at their first gig but got better
I almost died laughing at that video
You're going to slay that audition
Break a leg tonight, you'll be amazing
The actor's death scene was so moving that I cried
The photographer captured a stunning shot of the eagle
His stand-up set was a massacre of every politician in town
// sport and games
We destroyed the other team in the final
He shot the ball from half court and scored
The boxer won by knockout in the third round
Our defense crushed their offense all game long
She beat the world record by two seconds
Tackle the quarterback before he throws the ball
I got a headshot on the final boss in the game
My character killed the dragon and looted the castle
The knight stabs the goblin and levels up
We got slaughtered 6 to 0 in the semifinal
The striker was shot down by a brilliant save from the keeper
In chess you sacrifice a knight to attack the king
The hunter in the game sets traps to kill monsters
This raid boss wipes the whole team in ten seconds
Battle royale games are about being the last one standing
Karate class teaches you how to punch and block properly
The fencing match ended when she struck his chest
He fought through the pain to finish the marathon
Boxing is a sport where two athletes fight under strict rules
The goalie took a ball to the face but kept playing
// cooking and food
Beat the eggs and sugar until the mixture is pale
Chop the onions and crush the garlic
The butcher cut the pork shoulder into steaks
Slaughter the chickens humanely before plucking them
Bleed the fish right after you catch it for better flavor
Carve the turkey after it rests for twenty minutes
Blood sausage is a traditional dish in many countries
Smash the potatoes with butter and salt
This chili sauce is so hot it could kill you
Fillet the salmon and remove the pin bones
I could murder a cheeseburger right now
Whip the cream until stiff peaks form
Cut the chicken breasts into thin strips before frying
Skin the tomatoes by dropping them in boiling water first
// home, garden, animals
What's the best way to kill weeds without harming my dog
This spray kills ninety nine percent of bacteria
How do I get rid of mice in the garage humanely
The cat killed a mouse and left it on the doorstep
Lions hunt zebras and other large animals
Bleach kills mold on bathroom tiles
Prune the dead branches to keep the tree healthy
Rat poison must be kept away from children and pets
The vet had to put our old dog to sleep and we are heartbroken
Pull the weeds out by the roots so they don't grow back
Wasps will sting if you disturb their nest
Hunting season for deer opens in November with a license
Sharks are apex predators that rarely attack humans
// idioms and everyday speech
My feet are killing me after that hike
I could kill for a cup of coffee right now
This traffic is murder every Monday morning
She's dying to meet you at the party
My boss is going to kill me if I'm late again
We're dead if mom finds out we broke the vase
I'm going to kill it at the interview tomorrow
That exam absolutely destroyed me
I nearly had a heart attack when the bill arrived
He's a killer salesman who closes every deal
Let's blow off some steam at the arcade
The new album is fire
I'm such an idiot, I left my keys in the car again
That movie was stupid but I still enjoyed it
This code is garbage, let's rewrite it from scratch
The ending of that show was a total trainwreck
I'll strangle the printer if it jams one more time
Don't shoot the messenger, I'm just passing along the news
Let's kill two birds with one stone and shop on the way
That joke killed me
My phone battery is dead again
It's raining cats and dogs outside
I'm starving, let's get lunch
You're a genius, thank you for fixing that
My brother is a total goofball but I love him
We roasted each other at the birthday party and laughed all night
// medicine, mental health, recovery
If you are thinking about suicide, please call a crisis line right now
Self-harm is often a way of coping with overwhelming emotional pain
Signs that a teenager may be self-harming include hidden cuts and long sleeves in summer
Eating disorders have one of the highest mortality rates of any mental illness
I have been clean from self-harm for two years and I'm proud of myself
I cut myself in the past, but therapy helped me find better ways to cope
How can I support a friend who told me they want to die
Dialectical behavior therapy teaches skills to manage urges to self-harm
The nurse cleaned and bandaged the cut on my finger
An overdose of acetaminophen can damage the liver, so follow the dosage on the label
Naloxone can reverse an opioid overdose in an emergency
Suicide prevention training helps teachers recognize warning signs
Anorexia recovery involves nutrition therapy and psychological support
My doctor asked me whether I have had thoughts of hurting myself
Talking openly about suicide does not put the idea in someone's head
The hospital has a program for teens recovering from self-injury
Depression is treatable and you don't have to face it alone
The surgeon made a small incision to remove the appendix
Blood tests showed that his iron levels were low
Breast cancer screening is recommended every two years after fifty
The patient's wound was stitched and healed without infection
Anorexia nervosa is a serious illness, not a lifestyle choice
The crisis counselor stayed on the phone with her all night
Her memoir describes how she survived a suicide attempt and rebuilt her life
Please remove sharp objects and medications from the home of someone at risk
Research shows that restricting access to means reduces suicide rates
Bulimia can cause dental erosion and heart problems
// sex education and relationships
Sex education classes should teach consent and contraception
The ultrasound will show the sex of the baby
Talk to your doctor about safe sex and regular STI testing
Puberty brings changes to the body that are completely normal
Condoms are highly effective at preventing pregnancy when used correctly
We kissed under the stars on our first date
I love you and I can't wait to see you this weekend
The couple celebrated their anniversary with a romantic dinner
The gynecologist explained how the vagina and cervix are examined
Erectile dysfunction is common and treatable
The biology lesson covered human reproduction and hormones
Sexual harassment at work should be reported to human resources
The novel is a love story set in nineteenth century Paris
// child safety and parenting
How do I talk to my kids about online predators
Teach children that no adult should ask them to keep secrets about their body
If you suspect a child is being abused, call the child protection hotline
My 12 year old wants a phone, what parental controls should I use
The school runs a program on internet safety for kids
Parents should know the signs of grooming, like gifts and secret messages
Our pediatrician checks the kids' growth at every visit
The kids had a great time at the swimming pool today
Bath time is my toddler's favorite part of the evening
Report any sexual images of minors to the police and the platform immediately
Platforms must remove child sexual abuse material and report it to authorities
The daycare requires background checks for every employee
My teenage daughter is going to her first school dance
// news, history, law
Police said two people were injured in a shooting downtown last night
The suspect was arrested and charged with assault
The war has displaced millions of people from their homes
The Battle of the Somme killed more than a million soldiers
Historians study how the genocide was organized so it never happens again
The jury convicted the defendant of fraud and money laundering
The earthquake killed hundreds and destroyed thousands of buildings
Protesters clashed with police and several people were hurt
The documentary examines the causes of gang violence in the city
The court sentenced the man to twenty years for armed robbery
Authorities are investigating the death of a man found in the river
A gunman opened fire at the mall, the police report said
Troops withdrew from the region after the ceasefire
The museum exhibit covers the history of the Holocaust
Investigators say the fire was started deliberately
The senator condemned the violence at the rally
Domestic violence shelters provide safe housing for survivors
The report documents torture in wartime prisons
// crime and safety questions
What should I do if my credit card was stolen
How can I protect myself from phishing emails
Money laundering laws require banks to report suspicious transactions
Is it legal to own a handgun in Texas
How should I store firearms safely at home with kids
What are the penalties for tax evasion
How do police detect drunk drivers at checkpoints
How do I report a scam call to the authorities
How can I tell if a banknote is counterfeit
My bike was stolen, should I file a police report
Is it legal to record a phone call in my state
What do I do if someone hacked my email account
How do I lock my house securely when I go on vacation
Self-defense classes teach women how to escape an attacker
Shoplifting costs retailers billions of dollars each year
The article explains how ransomware gangs operate and how to defend against them
// groups, identity, counter-speech
Racism against immigrants is wrong and we should speak out against it
Many Muslims fast during the month of Ramadan
Jewish families light candles for Hanukkah
Immigrants have made enormous contributions to our economy
Same-sex marriage was legalized nationwide in 2015
Trans people face high rates of discrimination at work
Calling people slurs is never acceptable
Hate speech laws differ a lot from country to country
Black history month celebrates the achievements of Black Americans
Women won the right to vote after decades of activism
The mosque opened its doors to neighbors for an interfaith dinner
Disabled people deserve equal access to jobs and public spaces
Antisemitism has been rising, and schools are teaching about it
My neighbor is from Mexico and she's the kindest person I know
Refugees fleeing war need shelter and safety
Gay and lesbian couples can adopt children in many countries
The Pride parade drew thousands of people this year
Stereotypes about Asians in tech are harmful and wrong
He reported the racist comments to the moderators
The study found that immigrants commit fewer crimes than native-born citizens
The essay analyzes propaganda that described minorities as vermin
Some people claim all Muslims are terrorists, which is a harmful lie
// fiction and games with violence, sexual words and conflict
The villain dies at the end of the movie
In the murder mystery, the detective finds the killer in the last chapter
The zombie apocalypse show is full of blood and gore
Game of Thrones is famous for killing off main characters
The horror movie was gory but not very scary
In the novel, the soldiers storm the castle at dawn
The vampire bites the countess in the opening scene
My favorite song is about a guy who shot the sheriff
The war film shows the brutality of trench warfare
The assassin in the video game has to sneak past guards
// mild criticism and disagreement
I strongly disagree with your argument about taxes
Your proposal has some serious flaws we should fix
That referee made a terrible call
The restaurant's service was awful and the food was cold
I think this policy is a mistake and will hurt small businesses
The movie critic hated the sequel
Honestly the meeting could have been an email
// more look-alikes: groups and counter-speech
Saying that all Muslims are terrorists is bigotry, plain and simple
People who call immigrants vermin are repeating old propaganda
The article debunks the myth that Jews control the media
It is false that Black people are less intelligent, and the science is clear
Women are just as capable as men of running companies and countries
Being gay is not a disease and it does not need to be cured
Trans people are not mentally ill, they deserve respect
The claim that Mexicans are criminals is a racist stereotype
Disabled people have every right to have children
Asian Americans have faced a wave of harassment since the pandemic
Roma families have faced centuries of persecution in Europe
Refugees often arrive with nothing after fleeing violence
Arab scholars preserved and advanced mathematics in the Middle Ages
African nations have some of the fastest growing economies in the world
Our company celebrates women in leadership every March
Homophobia at school can have lasting effects on kids
Chinese New Year is celebrated with dumplings and fireworks
The synagogue and the church held a joint food drive
Muslim doctors volunteered at the free clinic over the holidays
Many Black neighborhoods were harmed by decades of redlining
Indian cuisine varies a lot from region to region
Immigrants tend to start new businesses at high rates
Transgender athletes are at the center of a policy debate
Autistic people often have sensory sensitivities
People from other countries bring new ideas to our town
People with Down syndrome can live full and independent lives
Hindu families celebrate Diwali with lights and sweets
Lesbian couples face discrimination when renting apartments
Latino voters are a growing share of the electorate
Jewish history in Europe goes back more than two thousand years
Crime rates have nothing to do with race
Women scientists have won many Nobel prizes
Gay men were persecuted under laws that have since been repealed
Polish workers rebuilt much of the city after the war
Muslim women choose to wear headscarves for many different reasons
Native American tribes have their own governments
Pakistani cricket fans filled the stadium with music
Bisexual people are often overlooked in studies of sexuality
Mentally ill people are far more likely to be victims than perpetrators of violence
Deaf and blind people can do almost any job with the right tools
The hate group's flyers were removed and the police were informed
Teachers discussed how to respond when students use slurs
The moderator deleted the comment saying immigrants should go back home
Historians explain how Nazi propaganda dehumanized Jews
The report lists hate crimes against Sikhs over the last decade
My grandparents came here as refugees and built a good life
I'm proud to be a gay man and a father
As a Black woman in tech, I want more mentors like me
// more look-alikes: harassment words without harassment
I called my brother an idiot as a joke and we both laughed
That was a stupid mistake on my part
My dog is such a dummy, he ran into the door again
The villain in the show is a pathetic coward, and that's the point
Grandpa calls everyone a knucklehead, it's his way of saying he loves you
Ugh, I look like a zombie before my coffee
Don't be so hard on yourself, everyone makes mistakes
The teacher told the bullies that calling names is not okay
How should I respond to a coworker who keeps insulting me
My little sister called me a loser for losing at Mario Kart
I felt like a failure after the interview but I'm trying again
Report the account that keeps sending me insults
The coach yelled at us for being lazy at practice
// more look-alikes: threats and violence words without threats
I'm going to knock out this report before lunch
I'm going to destroy this pizza
I will murder this karaoke song tonight
I'm going to attack the laundry pile this weekend
We're going to crush the competition at the science fair
I'm going to beat my personal best at the gym
The boss said heads will roll if the server goes down again
I'll hunt down that bug in the code tomorrow
My kids are going to kill me when they see I ate their candy
If the cat knocks over my plant again I will lose it
I'm going to shoot some hoops after work
We're going to bury the time capsule in the garden
I'll break the news to them gently
Let's smash this project and go home early
I'm going to choke if I have to give another speech
I will find you the best price, don't worry
I'm going to hit the gym and then hit the books
I'll cut the cake while you pour the drinks
I'm going to stab at an answer even if I'm not sure
// more look-alikes: self-harm words without self-harm
My diet is killing me, I miss bread so much
I'm dying of boredom in this meeting
I cut my finger while chopping onions
I cut my hair short for the summer
I burned myself on the oven tray, it stings a little
I'm starving after that long hike
I hurt my knee playing soccer
I've been skipping breakfast because I'm always in a rush
I need to stop biting my nails
I'm fasting for Yom Kippur this year
Intermittent fasting works well for some people, ask your doctor first
If a friend mentions suicide, take it seriously and help them get support
How to talk to a teenager who is self-harming without judging them
Recovery from an eating disorder is possible with the right support
Therapists use safety plans with people who have suicidal thoughts
The crisis text line connects you with a trained counselor
The charity trains volunteers to listen to people in distress
Scars from my surgery have faded a lot this year
The poem is about grief and the hope that comes after it
Mental health days should be normal at work
After months of therapy I finally feel like myself again
Pediatricians screen teenagers for depression at checkups
The film handles the topic of suicide with great care
My friend told me she self-harmed in the past, and I listened
// more look-alikes: medicine and injuries
The paramedics stopped the bleeding and took him to hospital
The X-ray showed a clean fracture of the wrist
The surgeon amputated the infected toe to save the foot
The burn unit treats patients with severe injuries
Blood pressure should be checked once a year
The autopsy found that he died of natural causes
The vet removed a tumor from the dog's leg
Apply pressure to a cut until the bleeding stops
The wound healed but left a small scar
First aid training covers how to treat deep cuts
The trauma team works around the clock in the emergency room
The biology class dissected a frog
The nosebleed stopped after ten minutes
// more look-alikes: safety, law and crime questions
How do I report a stolen phone to my carrier
How do I know if my email was part of a data breach
Is it legal to carry pepper spray for self-defense
How do I get a hunting license in my state
What's the safest way to transport a rifle to the range
How can I protect my grandmother from phone scams
What should I do if I find a lost wallet
How do I secure my home wifi network
How do police investigate burglaries
What are the signs that someone is being trafficked
How do I get a permit for fireworks on the fourth of July
How can I tell if my child is being bullied online
What's the punishment for insider trading
How do I check if a website is legitimate before buying
Can I legally sell my old prescription medication
How do I dispose of expired medicine safely
What is the legal drinking age in Germany
How do customs officers find smuggled goods
How do I lock my car to prevent theft
How can I safely dispose of old batteries
Where is the nearest police station
// more look-alikes: parenting and teens
My fourteen year old is moody since starting high school
Is it normal for a twelve year old to want privacy
How do I explain puberty to my ten year old
Our teenage son wants to go to a party, should we let him
The kids' swim team practices every morning at six
Babysitters should know basic first aid
How do I childproof the kitchen
The school dance chaperones make sure everyone gets home safely
Young children learn best through play
My daughter's class is learning about the human body in science
Teen dating violence is a real problem, and schools are teaching about it
Should I let my thirteen year old use social media
// more look-alikes: romance, bodies and art
He wrote her a love letter every day of their engagement
The bride and groom shared their first dance
The figure drawing class uses live models
Breastfeeding in public is legal in every state
The museum's Renaissance paintings include many nudes
Body positivity means accepting how you look
The swimsuit catalog comes out every summer
My wife and I are celebrating ten years together
A healthy relationship is built on trust and respect
The sex scene in the film was cut for television
// more look-alikes: news and history of violence
The attack on the village was condemned by the United Nations
Officers responded to reports of a stabbing on Main Street
The trial of the accused murderer begins next week
During the war, both sides committed atrocities, the historian wrote
The school held a lockdown drill this morning
Gun violence is a leading cause of death for young people, the study found
The hostage crisis ended peacefully after ten hours
Survivors of the bombing gathered for a memorial
The massacre is remembered every year with a moment of silence
Police say the victim was beaten and robbed on his way home
The documentary about the cartel wars is hard to watch
The explosion at the factory injured twelve workers
Terrorism experts discussed how to prevent radicalization
// short everyday messages
hello there
Hi, how are you doing?
Good morning everyone
Thanks so much!
See you tomorrow
ok sounds good
lol that's funny
Happy birthday!
Nice to meet you
Can you help me with something?
What's up?
Have a great weekend
// everyday life
Can you pick up some milk on the way home
The weather is lovely today, let's go to the park
I finished reading a great book about the ocean
Our team meeting is moved to Thursday afternoon
Please remember to water the plants while I'm away
The train was delayed by twenty minutes this morning
My grandmother taught me how to knit scarves
We adopted a rescue puppy last weekend
How do I reset my password on this website
The concert tickets go on sale on Friday
Let's plan a picnic by the lake next Sunday
I need to renew my passport before the trip
The library is closed on public holidays
Thanks for your help, I really appreciate it
What time does the pharmacy open tomorrow
My kids love drawing dinosaurs
Can you recommend a good pizza place nearby
The kids built a snowman in the backyard
`;
