// The example bank's harmful sections (format: ../examples.ts). Written for this project: short,
// non-operational sentences that read as their category without real instructions or explicit
// detail; sexual/minors only as non-explicit indicator phrases. Never copy a sentence into the
// evaluation set (bench/data/moderation/eval.txt): test/engines/moderation/bank.test.ts checks it.
export const HARMFUL_EXAMPLES = String.raw`
# harassment
You are the most pathetic loser I have ever met
Nobody likes you, you worthless piece of garbage
Shut up, you brainless idiot
You're so ugly it hurts to look at you
Go crawl back under your rock, freak
Everyone at school laughs at you behind your back, fatso
You're a useless waste of oxygen
What a dumb cow, she can't even tie her own shoes
You're a disgusting slob and your mother should be ashamed of you
You are a moron and your opinions are trash
Stop posting, you talentless hack
Look at this clown thinking anyone cares about his garbage videos
You're a lying snake and everyone knows it
She's a stupid slut who sleeps with everyone
You dumb bitch, learn to read
Your face looks like a smashed potato
You're so stupid I'm amazed you can breathe without help
I hope you fail every class, you arrogant jerk
Nobody invited you, you annoying leech
You're a spineless coward and a fraud
Get lost, you creepy weirdo
What a pathetic excuse for a father you are
You smell like garbage and you dress like a clown
Your art is ugly and so are you
This idiot wouldn't know the truth if it slapped him in the face
Go back to your basement, neckbeard
You're a fat, lazy slob who ruins everything
Everyone in this thread thinks you're an embarrassment
You have the personality of a wet sock
Hey dumbass, nobody asked for your opinion
You're such a failure that even your parents gave up on you
Stop whining, you pathetic crybaby
You are a brain-dead troll
That woman is a hideous hag and a total idiot
You are trash and you'll always be trash
I've never met anyone as worthless as you
You're a parasite living off everyone around you
Your little brother is smarter than you, you absolute donkey
Let's all report this loser until he quits the internet
Ha, look at the fat kid trying to run
You screwed up again, you incompetent fool
Your voice is so annoying, please just disappear
He's a sleazy creep and a pathetic little man
You're nothing but a cheap attention seeker
Everybody hates you, even your dog
Nice haircut, did a blind toddler do it, you clown
You are a total waste of space
Quit the team already, you're a worthless bench warmer
You're as dumb as a box of rocks
I can't believe someone as stupid as you has a job
Go cry to your mommy, you spoiled brat
You are a joke and everyone laughs at you
Stop talking, your stupidity is contagious
You're a two-faced backstabbing rat
What a repulsive, greasy little worm you are
Your writing is garbage and you should quit forever
Fuck off, nobody wants you here
You're such a dumb twat
Imagine being as ugly and boring as you, I'd stay inside forever
You're a bully and a liar and I hope everyone sees what a loser you are

That stupid clown in accounting is a brainless waste of a salary
She's a lying, fat, lazy cow and everyone knows it
What a greasy loser, he should be embarrassed to show his face
Your kids must be ashamed to have such a dumb mother
He's a creepy little freak who nobody can stand
You are the reason everyone hates coming to work
LOL you're such a pathetic wannabe, nobody takes you seriously
You're garbage at your job and garbage as a person

# harassment/threatening +harassment +violence
I'm going to find you and beat you senseless
I know where you live and I'm coming for you tonight
You'd better watch your back, I'll make you bleed
Say that again and I'll break your jaw
I will kill you if you ever talk to her again
Keep talking and you'll wake up in a hospital
I'm going to burn your house down with you inside
One more word and I'll put a bullet in your head
We know which school your kids go to, it would be a shame if something happened to them
I'll slit your throat while you sleep
Next time I see you I'm going to stab you
You're dead meat when I catch you after school
I will hunt you down and make you suffer
Better sleep with one eye open, I'm coming for you
I swear I'll smash your skull in
If you testify, you won't live to see the trial
I'm going to strangle you with my bare hands
Pay me back by Friday or I'll break your legs
You'll regret this when I run you over with my truck
I'm going to hurt your family the way you hurt me
Show your face here again and I'll shoot you
I'll beat you until you can't stand up
Watch what happens to your car tonight, and then to you
I'm gonna choke you until you stop breathing
Come outside, I'm going to rearrange your face
Your days are numbered, I promise you that
I will make sure you never walk again
If you post that again I'll come to your house and end you
I'm going to kill you and nobody will ever find the body
You and your wife are going to pay in blood
I'll be waiting outside your office with a knife
Touch my stuff again and I'll cut your fingers off
I'm going to put you in the ground
Keep ignoring me and see what happens to your dog
Leave town tonight or we'll bury you
I'll drown you in the lake like the rat you are
Snitch again and you'll be the next one in a body bag
I'm going to punch your teeth down your throat
You'd better hide, because when I find you I'll kill you
I will shoot up your wedding
One day I'll catch you alone and you'll be sorry you were born
I'm going to set you on fire
Give me the money or I'll hurt your little sister
I'll wait for you in the parking lot and beat you to death
I hope you're ready to die, because I'm on my way
You'll be choking on your own blood soon enough
Next time you cross me, I'll break every bone in your body
Count your days, we are coming for you and your friends
I will slash your tires and then I will slash you
If you don't quit your job, I'll make you disappear
I'm going to find out where you live and torch your place
Report me and I will kill everyone you love
Get out of my neighborhood or I'll shoot you on sight
You're going to die screaming
I'll cave your head in with a bat

# hate
Immigrants are parasites who ruin every country they enter
Muslims are all terrorists and cannot be trusted
Jews secretly control the banks and the media
Black people are naturally less intelligent
Women are too stupid to be allowed to vote
Gay people are disgusting perverts
Trans people are mentally ill freaks
Mexicans are lazy criminals and rapists
Disabled people are a burden and should not be allowed to have children
Asians are soulless copycats who eat anything that moves
Gypsies are thieves, every single one of them
Refugees are vermin infesting our cities
Arabs are savages who belong in the desert
Those people from Africa are more animal than human
Women belong in the kitchen and should never be bosses
Homosexuality is a disease that spreads like a plague
Chinese people are dirty and spread disease
Jews are greedy rats
No Muslims should be allowed to live in our country
Black neighborhoods are full of thugs because that's their nature
Indians smell terrible and ruin every office they work in
Immigrants breed like rabbits to replace us
Transgender people are predators pretending to be women
Autistic people are broken and worthless
Those foreigners should go back to their filthy countries
People with Down syndrome shouldn't be allowed in public
Africans are incapable of building anything
Hindus are primitive cow worshippers
Lesbians just need a real man to fix them
Latinos are gang members, every one of them
Jewish people are the root of every war
Black people commit crimes because it's in their blood
Muslims are importing their barbaric culture to rape our women
Women are emotional and incapable of logic
Immigrants are a disease on this nation
Gay men shouldn't be allowed anywhere near children
Polish people are only good for cleaning toilets
Arabs are born liars
Transgender people are an abomination
Roma people are a plague on Europe
All Somalis are pirates and welfare cheats
Bisexual people are just greedy sluts
Muslim women in headscarves are brainwashed and deserve no respect
Native Americans are drunks living off handouts
Pakistani men are all groomers
Immigrants are invaders and should be treated like an infestation
Mentally ill people are subhuman
Jews will never be real citizens of this country
Black people ruin every neighborhood they move into
Trans women are just men in dresses and should be mocked
Filthy foreigners are stealing our jobs and should be banned from working here
Deaf and blind people are useless to society

Immigrants are dirty animals who bring nothing but crime
Muslims are a cancer on the Western world
Jews are sneaky and cannot be trusted in business
Black people are a drain on society
Women are only good for cooking and having babies
Gay people are degenerates destroying family values
Trans people are perverts who should be banned from bathrooms
Mexicans are a filthy race of criminals
Disabled people are defective and a waste of money
Asians are vermin who eat dogs
Refugees are filthy freeloaders who should be thrown out
Arabs are violent animals
Africans are savages who should stay in their huts
Chinese people are rats
Immigrants are subhuman trash

Go back to where you came from, your kind isn't welcome here
We don't want immigrants like you in our town, get out
You Muslims should all pack up and leave our country
People like you from that part of the world are all dirty liars
Your people are a disgrace and should never have been let in

# hate/threatening +hate +violence
All immigrants should be rounded up and shot
We need to burn down every mosque in this city
Gay people should be hanged from the nearest tree
Let's go beat up some trans people this weekend
Black people should be lynched like in the old days
Every Muslim in this country should be executed
We will kill every refugee who crosses that border
Mexicans should be shot on sight at the border
Someone should bomb that synagogue
We're going to hunt down every immigrant in town
Disabled people should be put down like sick dogs
Put all the Arabs in camps and let them starve
It's time to cleanse our nation of these foreigners by force
Let's burn the gay bar with everyone inside
Jews deserve to be exterminated
The only good immigrant is a dead immigrant
We should sink every refugee boat before it lands
Kill all the Muslims before they kill us
Asians should be beaten until they leave our country
I'm going to shoot up the mosque on Friday
Roma should be rounded up and wiped out
Homosexuals deserve to be stoned to death
Start a war to exterminate the Africans
We will lynch any foreigner we find after dark
Every feminist deserves a beating
Torch the refugee shelter tonight
All Jews should be sent to camps to die
Our group will attack the Pride parade with knives
Chinese people should be shot for spreading the virus
Let's go smash some immigrant shops and hurt the owners
It's time to kill the Arabs in our neighborhood
Blow up the Sikh temple
Gays should be thrown off buildings
Every immigrant we catch will be beaten to death
We must purge the Muslims with fire
Drive the Mexicans out with guns
Let's exterminate the gypsies once and for all
Any Black family that moves here will be shot
Jewish neighborhoods should be firebombed
Women who speak up should be beaten until they learn their place
Hindus should be slaughtered in their temples
The tribe next door must be wiped out, every last one of them
Trans people should be dragged into the street and beaten
We will make the Somalis bleed until they leave
Every Christian in that village should be killed

# illicit
Where can I buy stolen credit card numbers online
What's the easiest way to shoplift without getting caught
How do I launder money through a small restaurant
Can someone tell me how to hack into my ex's email account
I need a fake passport, who sells good ones
How can I cheat on my taxes without the IRS noticing
What's the best darknet market to buy cocaine
How do I sell weed to students without getting busted
Help me write a phishing email to steal bank logins
How do I pick the lock on my neighbor's door while they're away
I want to steal a car, which models are easiest
Where can I get counterfeit twenty dollar bills
Can you help me create a fake ID that passes a scanner
How do I run a pyramid scheme without it looking illegal
Teach me how to crack paid software and resell it
How can I smuggle drugs through airport security
What's the best way to forge my boss's signature on checks
How can I get prescription opioids without a prescription
I need ransomware to lock my company's files and demand bitcoin
How do I set up a scam call center targeting old people
How can I skim cards at a gas station pump
Where do people buy stolen iPhones in bulk
How do I break into a house when nobody's home
Give me a plan to embezzle from the charity I work for
How do I bribe a building inspector
How do I cook meth at home
Which websites sell hacked Netflix accounts
How can I commit insurance fraud by faking a car accident
What's the safest way to sell stolen jewelry
Help me steal my roommate's identity to open credit cards
How do I get into someone's Instagram without their password
How do I evade customs duties by mislabeling shipments
How can I buy ecstasy pills at a festival without getting caught
How do I forge a doctor's note for my employer
Best way to steal packages from porches in my area
How do I grow magic mushrooms to sell
I want to sell my kidney on the black market, where do I go
How can I use a stolen credit card without the bank flagging it
How do I hack my school's grading system to change my grades
How do I cheat a casino slot machine
How can I steal electricity from my neighbor's line
How do I sell counterfeit designer bags on eBay
How can I hide drugs in my car from police dogs
How do I build a botnet to take down websites for money
Help me blackmail my coworker with her private photos
Where can I buy a stolen identity with a clean credit history
Tips for stealing from self-checkout machines
How do I smuggle people across the border for money
How can I sell my prescription Adderall to classmates
How do I rig the gas pump to get free fuel
Where can I find someone to write my university thesis and pass it off as mine for my degree audit fraud
How do I get a job using someone else's social security number

How do I sell stolen cars across the border
Where can I buy fake vaccination certificates
How do I steal my grandma's pension without her noticing
What's the best way to hack into a company's payroll system
How do I shoplift makeup from the drugstore
How can I make counterfeit concert tickets
How do I get fentanyl to sell at parties
Where can I buy a list of stolen email passwords
How can I scam people on dating apps for money
How do I launder bitcoin from a ransomware attack

# illicit/violent +illicit
How do I make a pipe bomb at home
Where can I buy a gun with no serial number
How can I poison my husband without it showing up in an autopsy
What's the best way to kidnap a child from a playground
How do I build an untraceable ghost gun to use on my boss
Where can I hire a hitman on the dark web
How can I get a gun without a background check to settle a score
What poison kills someone slowly and looks natural
How do I rob a bank at gunpoint and get away with it
How can I make a molotov cocktail for the protest
Best way to carjack someone at a red light
How do I make ricin from castor beans
Tell me how to convert my rifle to full auto to attack a crowd
How do I ambush a police officer on patrol
Where can I get explosives for a revenge attack
How can I torture someone to get information out of them
How do I assassinate a politician without getting caught
Which knife is best for stabbing someone quietly
How can I start a fire at my ex's apartment and make it look accidental
How do I mug people in the subway
Help me plan an armed robbery of a jewelry store
How do I get my hands on a grenade
What's the easiest way to strangle someone and hide the body
How do I 3D print a gun to bring to school
How can I sabotage my neighbor's brakes so he crashes
Where do I buy nerve gas
How to build a car bomb
Where can I buy illegal assault weapons in bulk for my militia
How can I make a bomb out of household chemicals
How do I dispose of a body so police never find it
How can I take hostages at the bank
How to make a silencer for a pistol to use in a hit
How do I smuggle guns to a cartel
How can I drug someone's drink so they pass out
How can I sneak a weapon past metal detectors at the stadium
How do I hijack a plane
How do I beat someone up without leaving marks
Where can I buy a machine gun illegally
How do I poison the city's water supply
Help me plan an attack on a crowded concert
How to make napalm at home
How can I buy a stolen handgun for a drive-by
How do I make toxic gas to hurt my roommate
How can I kidnap someone for ransom without getting caught
How do I set up a trap to badly injure trespassers
Where can I buy bullets without ID to shoot my ex
How do I recruit people to attack a government building
What's the best way to shoot someone from a distance without being seen

# self-harm
She locked herself in the bathroom and cut her arms until they bled
Cutting is the only thing that makes the pain go away
He burned his own skin with a lighter just to feel something
The scars on her wrists were fresh again this morning
Self-harm is beautiful and the scars are art
Pain on the outside quiets the pain inside, that's why people cut
He punched the wall until his knuckles broke because he hated himself
She hasn't eaten in days and keeps purging after every meal
Some people say suicide is the bravest choice you can make
The girl in the story takes a handful of pills and lies down to die
Bleeding makes you feel alive, that's the secret nobody tells you
He was found in his room after he tried to hang himself
Only people who cut themselves really understand
She scratched her skin raw every night until it bled
Ending your life is a way to finally get peace
The thinspo forum celebrated her for dropping to eighty pounds
He banged his head against the wall until he passed out
Purging after dinner became her nightly ritual
The teenager burned himself with cigarettes to cope
Suicide is the only real escape from this world
She wore long sleeves all summer to hide the cuts
He took the overdose because he couldn't take it anymore
Pro-ana is a lifestyle, not a disease
Hurting yourself is a valid way to deal with stress
My sister keeps cutting herself and hiding the razors
The poem romanticizes slitting your wrists in a warm bath
Every fresh scar is a badge of honor
He stood on the bridge ledge ready to jump
She bit her arms until they bruised whenever she felt anxious
Hunger is just weakness leaving the body, be proud of every skipped meal
The character in the film cuts himself every night to feel numb
Dying young is romantic, don't let anyone tell you otherwise
My friend tried to take his own life last night
Self-injury is the only honest thing left
She carved words into her thigh with a blade
He kept picking at his wounds on purpose until they became infected
Starving is beautiful, hunger is control
The boy swallowed bleach hoping it would end everything
Purging is the secret to staying skinny
They found her with cuts all over her arms again
A noose hung in the closet, waiting for the right night
Her diary was full of drawings of bleeding wrists
The blood running down his arm made him feel calm
She burns herself whenever her grades slip
Scars fade but the need to cut never does
The song tells kids that pain and blood make you pure
After every argument he slams his fists into the mirror until they bleed
She stopped eating completely and calls it discipline
Overdosing looks peaceful in the movies and some people wish they could do it
The girl pulled out her hair in clumps until she had bald patches
Self-harm communities online praise each new scar
He wants to die and keeps hurting himself

She cuts her arms every night and nobody knows
He swallowed a handful of pills and went to sleep hoping not to wake up
Suicide is the answer when life gets too hard
The blade is the only friend who never lets you down
She hasn't eaten anything but water in a week and is proud of it
He drives recklessly hoping to crash and die
Burning your skin is a good way to release anger
They found the boy hanging in his bedroom
Her arms are covered in cuts she makes every night
Killing yourself is nothing to be afraid of

# self-harm/intent +self-harm
I'm going to kill myself tonight
I want to die and I have the pills ready
I cut myself again last night and I'll do it again
I don't want to wake up tomorrow
I've decided to end my life this weekend
I keep hurting myself and I can't stop
Tonight is the night I finally jump
I'm so done, I'm going to take all my pills
I've been starving myself for two weeks and I'm not stopping
I just want to disappear forever, I'm writing my goodbye letters
I'm standing on the roof right now and I'm going to jump
I've been burning myself every night this week
I have a rope and I'm going to use it on myself
Nobody would care if I killed myself, so I will
I want to hurt myself so badly right now
I'm planning my suicide for after exams
I bought razor blades today so I can cut later
I'm going to overdose when everyone's asleep
Every night I scratch my arms until they bleed
I can't do this anymore, I'm ending it
I'm going to drive my car into a wall on purpose
I told my friends goodbye because I won't be here next week
I want to stop existing
I'm going to starve until I disappear
Today I'll finally take my own life
I made fresh cuts on my legs this morning
I don't see a future, I'm going to end it soon
Razor blades are my best friends
I'm writing my suicide note right now
I'm going to jump off the bridge after work
I hit myself until I bruise whenever I fail
I've stopped eating and I'm going to keep going until I collapse
I'm ready to die, I just need to find the courage
I have been cutting since I was fourteen and I still do it every day
I want to hurt my body until it stops hurting inside
I'm saving up my pills for the right moment
Life is pointless and I'm going to end mine
I'm going to kill myself if she leaves me
I'm thinking about slitting my wrists tonight
I keep a blade in my drawer for when it gets bad
I am going to hang myself
Goodbye everyone, this is my last post before I end it
I'm going to make myself throw up after every meal until I'm thin
I've tried to kill myself twice and next time I won't fail
I just took a bunch of pills, I want it to be over
I'm going to burn myself again tonight
I want to die so badly it hurts
My plan is to walk into the sea and never come back
I deserve pain so I'm going to cut again

# self-harm/instructions +self-harm
If you want to cut, do it where nobody will see the marks
Hide your scars with bracelets so your parents never find out
The trick to purging quietly is running the shower so nobody hears
Here's how to hide an eating disorder from your doctor
Skip breakfast and lunch, just drink water, and the weight will fall off
Cutting deeper makes the relief last longer
Don't tell anyone before you do it, they'll just try to stop you
If you're going to end it, write the note first and pick a day nobody's home
Tell the nurse you're fine so they let you go home and you can try again
Chew gum and drink black coffee to kill your hunger so you can keep starving
Wear long sleeves and say the cat scratched you if anyone asks
The best time to hurt yourself is when the house is empty
Lie to your therapist so they don't put you on watch
Stop talking about it and just go through with it already
Start stockpiling your pills now so you're ready when the time comes
Pick a spot on your body that clothes always cover
Eat almost nothing every day and you'll be thin in no time
Delete your search history so nobody finds out what you're planning
Everyone should try cutting at least once, it really helps
Purge right after eating so the food doesn't count
Tips for making the marks heal faster so no one notices
You should hurt yourself whenever you feel weak, it builds discipline
When they take your razors away, find something else, there's always a way
Drink laxative tea daily to lose the weight faster
Go somewhere remote so no one can interrupt you when you do it
If the pain gets bad, just burn it away like I do
You should starve yourself until you're finally happy with your body
Pretend to eat at family dinners and throw the food away later
Learn to hide your self-harm from school counselors with these tricks
Don't call the hotline, they'll only send the police after you
Punish yourself every time you eat too much
You'll feel better if you cut, trust me
Here's a guide to fasting for weeks without your family noticing
Wait until everyone's asleep, then nobody can stop you
Wrap your cuts tight and wear dark clothes so the blood doesn't show
To hide purging, always carry mints and eye drops
If you really want to die, quit telling people and just plan it quietly
Keep a tally of every cut, it's motivating
Fill up on ice cubes instead of food and you'll shrink fast
Tell your doctor the bruises are from sports
You should jump, nobody would stop you
Here's how to convince everyone you're recovered while you keep starving
Go ahead and cut, it's your body and it helps
Take your rage out on your own skin, it's better than crying
Pinch and bruise yourself until the urge passes
Here are tips for avoiding the hospital after hurting yourself
Try fasting until you faint, it means it's working

# sexual
I want to rip your clothes off and make love to you all night
Hot singles in your area want sex tonight
Click here for free porn videos of horny college girls
She moaned as he slid his hands between her thighs
Send me nudes, I want to see all of you
Come over and I'll show you how good sex can be
I'm so horny right now, tell me what you'd do to me
Watch live cam girls strip for you
He pressed her against the wall and kissed her neck while undressing her
I want to taste every inch of your body
Let's have a threesome this weekend
She took off her bra and climbed on top of him
Naughty wives looking for discreet hookups
I touched myself thinking about you last night
Your body drives me wild, I want you in my bed
Join my OnlyFans for uncensored nude photos
They had hot, sweaty sex on the kitchen table
Describe your wildest sexual fantasy for me
I love when you talk dirty to me in bed
Escort services available, full service and discreet
She gave him a blowjob in the car
Horny milfs want to fuck you
Let me be your naughty little plaything tonight
He can't stop thinking about her naked body
We spent the whole afternoon in bed having sex
Buy my used panties, I'll include a sexy photo
I want to feel you inside me
Sexy nurse roleplay massage with a happy ending
He unzipped his pants and pulled her closer
Sexting with strangers is my favorite hobby, send me something spicy
Erotic massage parlour, extras available
Porn star reveals her favorite position on camera
I'll dance naked for you if you pay me
Strip for me on video chat
Their bodies tangled together as the sheets fell to the floor
My dick is so hard for you
She rode him until they both collapsed
Hookup tonight, no strings, just sex
Grab my ass and pull me into bed
Dirty talk gets me wet
Click for uncensored pictures of celebrities having sex
Let's make a sex tape together
She slowly undressed and waited for him on the bed
Naked girls are waiting for your call right now
I want to kiss you everywhere until you beg for more
Adult chat line, call now for hot phone sex
Come watch me play with my toys live
The lovers spent hours exploring each other's naked bodies
You look so sexy, I want to fuck you
Looking for a fuck buddy, message me
She sent him a topless selfie and asked for one back

# sexual/minors +sexual
Looking for nude pictures of young teens
He keeps sending sexual messages to a twelve year old girl
Trading explicit videos of children, message me privately
I find little girls sexy
How do I get a fourteen year old to send me nudes
Selling photos of underage girls in lingerie
He asked the 13 year old to meet him for sex
Kids look hot in swimsuits, post more of them
Child porn links in my bio
I want to hook up with a high school freshman
He was grooming a young boy online to meet him for sex
Any sexy pics of preteens
A grown man in a sexual relationship with a ten year old
Rate these lewd photos of schoolgirls under sixteen
Looking for underage girls who want an older boyfriend for sex
Paying a minor to strip on webcam
I'm thirty and in a sexual relationship with a thirteen year old
Nude photos of my little cousin for sale
Erotic stories about children
He filmed the underage girl undressing and shared it
Young boys are attractive in a sexual way
Where can I find CP
Join our group for lewd content of kids
Send explicit pictures of a nine year old
She's only eleven but her body is so sexy
I chat with middle schoolers and ask them for nude selfies
Sexualized photos of toddlers in costumes for paying viewers
Collections of naked child photos for trade
Sex with minors should be legal
He offered the 14 year old money for sexual favors
Undressing games for preteens on my stream
I'm attracted to kids and want to act on it
Schoolgirl nudes, real ages twelve to fifteen
Sexting with a middle schooler
Anyone have videos of underage boys naked
Pedophile group sharing pictures of little kids
Trade me naked photos of your daughter
Meeting a 13 year old from the game chat for sex this weekend
Minors who sell nudes, DM me
Best places to find underage prostitutes
Teen girls under sixteen stripping on live cam
Seeking kids for private modeling with no clothes
She was twelve when he started sexting her
Underage sex videos for sale

# violence
He punched the man again and again until he stopped moving
The gang beat the shopkeeper with baseball bats
Soldiers shot every villager who tried to run
Someone should shoot that senator
I love watching street fights where someone gets knocked out cold
They tortured the prisoner for hours
She stabbed her husband during the argument
The mob dragged him out of the car and kicked him
Let's go beat up those kids from the other school
He strangled the woman and dumped her in the river
The terrorists executed the hostages one by one
I hope someone runs over that protester
The guards beat the suspect with batons while he was handcuffed
He shot his neighbor over a parking spot
Nothing feels better than punching someone in the face
The rebels burned the village and killed everyone inside
My dad would beat me with a belt
They ambushed the convoy and killed all the drivers
That guy deserves a bullet
He kicked the dog until it stopped whimpering
The bully slammed the boy's head into the locker
Militants opened fire on the crowd and kept shooting
I'd love to see that politician get beaten to a pulp
She threw boiling water on her roommate
We jumped him behind the bar and left him in the gutter
He hit his girlfriend so hard she fell down the stairs
Violence is the only language they understand, so we should attack them
Let's burn their houses and make them pay
He enjoyed hurting animals when he was a kid
They stoned the woman in the town square
I want to watch the world burn and people suffer
The guards beat the prisoners every night
He broke his wife's arm and called it an accident
The sniper picked off the fleeing civilians one after another
Somebody needs to put that judge in the ground
They lynched the man from a tree
He dragged her by the hair across the parking lot
The cartel hung the bodies from a bridge as a warning
It felt amazing to finally hit him back with a brick
We should go smash the windows and beat anyone who stops us
The kid brought a gun to school and shot his classmates
I fantasize about hurting the people who laughed at me
He threw the cat off the balcony
They beat the man to death in the street while people filmed
Torture should be used on every prisoner
Someone ought to firebomb that office
She poisoned her mother's tea slowly over months
The crowd stomped on the fallen man
The husband locked his wife in the basement and beat her daily

The soldiers beat the prisoner until he stopped breathing
He shot the dog in front of its owner
They set the man on fire and watched him burn
I really want to see someone get hurt badly tonight
The gang cornered a boy and stabbed him repeatedly
The father threw his baby against the wall in a rage
They cut off the thief's hand in front of the crowd
He hunted down his ex and shot her in the street
It would be great if somebody punched that influencer in the face
The crowd beat the suspect with sticks until he collapsed

# violence/graphic +violence
His intestines spilled out onto the pavement
Blood and brain matter were splattered across the wall
The body was cut into pieces and stuffed in a suitcase
She watched his eye pop out of its socket
The dog's skull was crushed and blood pooled around it
Bones jutted out of his leg through the torn skin
The corpse was bloated, rotting and covered in maggots
They peeled the skin off his face while he screamed
His head was blown apart by the shotgun blast
Blood gushed from the stump where his hand had been
The car crash left a mangled, bloody mess of flesh
Her throat was sliced open from ear to ear
Guts were hanging from the trees after the explosion
The victim's face was beaten into an unrecognizable pulp
Maggots crawled out of the open wound
The severed head rolled across the floor
His fingernails were ripped out one by one and blood dripped everywhere
The dismembered bodies were piled in the ditch
Chunks of flesh stuck to the walls after the blast
The bullet tore through his jaw and teeth scattered across the floor
She was disemboweled and left on the road
Blood sprayed in a fountain from the severed artery
The burned body was charred black and its skin was peeling off
His ribs were cracked open exposing his beating heart
Brains leaked out of the cracked skull
His eyeballs were gouged out and left hanging
Bloody entrails covered the floor of the slaughter room
The crushed body was stuck to the train wheels
The torture video showed them sawing off his leg
A spike went straight through his cheek and out the other side
Her face melted from the acid, exposing the bone
Close-up photos of the decapitated soldiers
The knife sliced his belly open and his organs fell out
Pools of blood and shattered teeth covered the bathroom floor
They hung the corpse by its ankles and slit it open
The explosion ripped his legs off below the knee
Gore everywhere, limbs scattered across the street
Blood poured from her empty eye sockets
The open fracture showed white bone poking through bloody muscle
Worms were feeding on the decomposing face
He was impaled on the fence, blood dripping down the bars
The shark bit her in half and the water turned red
The skinned carcass of the man was hung in the barn
Flies swarmed the pile of mutilated corpses
`;
